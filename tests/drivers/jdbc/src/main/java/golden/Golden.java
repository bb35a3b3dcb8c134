package golden;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.Statement;
import java.util.Set;

/**
 * Runs one query (read from stdin) through mssql-jdbc and prints its first row as JSON:
 * a list of {"name", "type", "class", "value"} where value is a string (binary as hex).
 * Usage: java golden.Golden JDBC_URL [ACCESS_TOKEN] < query.sql
 */
public final class Golden {
    private static final Set<String> TEMPORAL =
            Set.of("date", "time", "datetime", "datetime2", "smalldatetime", "datetimeoffset");

    private Golden() {}

    public static void main(String[] args) throws Exception {
        String sql = new String(readAll(System.in), StandardCharsets.UTF_8);
        java.util.Properties props = new java.util.Properties();
        if (args.length > 1) {
            props.setProperty("accessToken", args[1]);
        }
        StringBuilder out = new StringBuilder("[");
        try (Connection conn = DriverManager.getConnection(args[0], props);
                Statement st = conn.createStatement();
                ResultSet rs = st.executeQuery(sql)) {
            ResultSetMetaData md = rs.getMetaData();
            if (!rs.next()) {
                throw new IllegalStateException("no row");
            }
            for (int i = 1; i <= md.getColumnCount(); i++) {
                String type = md.getColumnTypeName(i);
                Object value = TEMPORAL.contains(type) ? rs.getString(i) : rs.getObject(i);
                if (i > 1) {
                    out.append(",\n");
                }
                out.append("{\"name\":").append(quote(md.getColumnName(i)));
                out.append(",\"type\":").append(quote(type));
                out.append(",\"class\":").append(quote(value == null ? "null" : value.getClass().getName()));
                out.append(",\"value\":").append(value == null ? "null" : quote(text(value)));
                out.append("}");
            }
        }
        out.append("]");
        System.out.write(out.toString().getBytes(StandardCharsets.UTF_8));
        System.out.flush();
    }

    static String text(Object value) {
        if (value instanceof byte[] bytes) {
            StringBuilder hex = new StringBuilder();
            for (byte b : bytes) {
                hex.append(String.format("%02x", b & 0xff));
            }
            return hex.toString();
        }
        if (value instanceof BigDecimal dec) {
            return dec.toPlainString();
        }
        if (value instanceof Float f) {
            return Double.toString(f.doubleValue());
        }
        if (value instanceof java.sql.Clob clob) {
            try {
                return clob.getSubString(1, (int) clob.length());
            } catch (java.sql.SQLException e) {
                throw new IllegalStateException(e);
            }
        }
        if (value instanceof java.sql.SQLXML xml) {
            try {
                return xml.getString();
            } catch (java.sql.SQLException e) {
                throw new IllegalStateException(e);
            }
        }
        return value.toString();
    }

    static String quote(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '"' || c == '\\') {
                b.append('\\').append(c);
            } else if (c < 0x20 || c > 0x7e) {
                b.append(String.format("\\u%04x", (int) c));
            } else {
                b.append(c);
            }
        }
        return b.append('"').toString();
    }

    static byte[] readAll(InputStream in) throws IOException {
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        in.transferTo(buf);
        return buf.toByteArray();
    }
}
