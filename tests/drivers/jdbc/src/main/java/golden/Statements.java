package golden;

import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.Types;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;

/**
 * Runs statements through mssql-jdbc PreparedStatements (their parameters bound with setInt,
 * setNString, setBytes), each three times, as an application reruns a prepared statement (the
 * driver sends sp_executesql, then sp_prepexec, then sp_execute), and prints, per statement,
 * the third run's result sets as JSON: a list of
 * {"results": [[[{"class", "value"}, ...], ...], ...], "error": number or null}.
 *
 * <p>Input on stdin, one field a line: "S base64(sql)" starts a statement, "P type
 * base64(value)" adds a parameter (type int, nvarchar or varbinary; value "-" for NULL).
 * Usage: java golden.Statements JDBC_URL < statements.txt
 */
public final class Statements {
    private Statements() {}

    private record Param(String type, String value) {}

    private record Statement(String sql, List<Param> params) {}

    public static void main(String[] args) throws Exception {
        String input = new String(Golden.readAll(System.in), StandardCharsets.UTF_8);
        List<Statement> statements = new ArrayList<>();
        Base64.Decoder b64 = Base64.getDecoder();
        for (String line : input.split("\n")) {
            String[] parts = line.split(" ");
            if (parts[0].equals("S")) {
                String sql = new String(b64.decode(parts[1]), StandardCharsets.UTF_8);
                statements.add(new Statement(sql, new ArrayList<>()));
            } else if (parts[0].equals("P")) {
                String value = parts[2].equals("-") ? null : parts[2];
                statements.get(statements.size() - 1).params().add(new Param(parts[1], value));
            }
        }
        StringBuilder out = new StringBuilder("[");
        try (Connection conn = DriverManager.getConnection(args[0])) {
            for (int s = 0; s < statements.size(); s++) {
                out.append(s > 0 ? ",\n" : "").append(run(conn, statements.get(s)));
            }
        }
        out.append("]");
        System.out.write(out.toString().getBytes(StandardCharsets.UTF_8));
        System.out.flush();
    }

    private static String run(Connection conn, Statement statement) {
        try (PreparedStatement ps = conn.prepareStatement(statement.sql())) {
            String out = "";
            for (int run = 0; run < 3; run++) {
                out = execute(ps, statement);
            }
            return out;
        } catch (SQLException e) {
            return "{\"results\":[],\"error\":" + e.getErrorCode() + "}";
        }
    }

    private static String execute(PreparedStatement ps, Statement statement) {
        StringBuilder out = new StringBuilder("{\"results\":[");
        try {
            bind(ps, statement.params());
            boolean isResult = ps.execute();
            int sets = 0;
            while (true) {
                if (isResult) {
                    try (ResultSet rs = ps.getResultSet()) {
                        out.append(sets++ > 0 ? "," : "").append(rows(rs));
                    }
                } else if (ps.getUpdateCount() == -1) {
                    break;
                }
                isResult = ps.getMoreResults();
            }
            out.append("],\"error\":null}");
        } catch (SQLException e) {
            return "{\"results\":[],\"error\":" + e.getErrorCode() + "}";
        }
        return out.toString();
    }

    private static void bind(PreparedStatement ps, List<Param> params) throws SQLException {
        Base64.Decoder b64 = Base64.getDecoder();
        for (int i = 0; i < params.size(); i++) {
            Param p = params.get(i);
            if (p.value() == null) {
                ps.setNull(i + 1, Types.NVARCHAR);
                continue;
            }
            byte[] raw = b64.decode(p.value());
            switch (p.type()) {
                case "int" -> ps.setInt(i + 1, Integer.parseInt(new String(raw, StandardCharsets.UTF_8)));
                case "varbinary" -> ps.setBytes(i + 1, raw);
                default -> ps.setNString(i + 1, new String(raw, StandardCharsets.UTF_8));
            }
        }
    }

    private static String rows(ResultSet rs) throws SQLException {
        ResultSetMetaData md = rs.getMetaData();
        StringBuilder out = new StringBuilder("[");
        int n = 0;
        while (rs.next()) {
            out.append(n++ > 0 ? "," : "").append("[");
            for (int i = 1; i <= md.getColumnCount(); i++) {
                Object value = rs.getObject(i);
                out.append(i > 1 ? "," : "");
                out.append("{\"class\":").append(Golden.quote(value == null ? "null" : value.getClass().getName()));
                out.append(",\"value\":").append(value == null ? "null" : Golden.quote(Golden.text(value)));
                out.append("}");
            }
            out.append("]");
        }
        return out.append("]").toString();
    }
}
