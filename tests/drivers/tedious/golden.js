// Runs one query (read from stdin) through tedious and prints the first row as JSON.
// Usage: node golden.js '<config JSON>' < query.sql
// Each value becomes {type, kind, value[, ns]}: Date values as ISO text plus tedious's
// nanosecondDelta (the digits below the millisecond), Buffers as hex, numbers as JS text.
'use strict';
const fs = require('fs');
const { Connection, Request } = require('tedious');

const settings = JSON.parse(process.argv[2]);
const sql = fs.readFileSync(0, 'utf8');
const options = {
  port: settings.port,
  database: settings.database,
  encrypt: settings.encrypt,
  trustServerCertificate: settings.trustServerCertificate,
  connectTimeout: 15000,
  requestTimeout: 60000,
};
if (settings.ca) {
  options.cryptoCredentialsDetails = { ca: fs.readFileSync(settings.ca) };
}
const connection = new Connection({
  server: settings.host,
  authentication: {
    type: 'default',
    options: { userName: settings.user, password: settings.password },
  },
  options,
});

function convert(column) {
  const value = column.value;
  const type = column.metadata.type.name;
  if (value === null || value === undefined) return { type, kind: 'null', value: null };
  if (value instanceof Date) {
    return { type, kind: 'date', value: value.toISOString(), ns: value.nanosecondsDelta ?? 0 };
  }
  if (Buffer.isBuffer(value)) return { type, kind: 'buffer', value: value.toString('hex') };
  return { type, kind: typeof value, value: String(value) };
}

let row = null;
connection.on('connect', (err) => {
  if (err) {
    console.error(String(err && err.message));
    process.exit(2);
  }
  const request = new Request(sql, (error) => {
    connection.close();
    if (error) {
      console.error(String(error.message));
      process.exit(3);
    }
    process.stdout.write(JSON.stringify(row));
  });
  request.on('row', (columns) => {
    if (row === null) {
      row = {};
      for (const column of columns) row[column.metadata.colName] = convert(column);
    }
  });
  connection.execSql(request);
});
connection.connect();
