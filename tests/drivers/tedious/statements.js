// Runs statements through tedious and prints, per statement, its result sets as JSON.
// Usage: node statements.js '<config JSON>' < statements.json
// Input: [{sql, params: [{type: int|nvarchar|varbinary, value}]}] (varbinary values in hex).
// A statement with parameters is prepared (sp_prepare), executed twice (sp_execute) and
// unprepared (sp_unprepare); one without runs as a batch. Output: [{results, error}] where
// results holds each result set's rows, each value {type, kind, value} (Buffers as hex).
'use strict';
const fs = require('fs');
const { Connection, Request, TYPES } = require('tedious');

const settings = JSON.parse(process.argv[2]);
const statements = JSON.parse(fs.readFileSync(0, 'utf8'));
const connection = new Connection({
  server: settings.host,
  authentication: {
    type: 'default',
    options: { userName: settings.user, password: settings.password },
  },
  options: {
    port: settings.port,
    database: settings.database,
    encrypt: false,
    trustServerCertificate: false,
    connectTimeout: 15000,
    requestTimeout: 60000,
  },
});

const TYPE_OF = { int: TYPES.Int, nvarchar: TYPES.NVarChar, varbinary: TYPES.VarBinary };

function convert(column) {
  const value = column.value;
  const type = column.metadata.type.name;
  if (value === null || value === undefined) return { type, kind: 'null', value: null };
  if (value instanceof Date) return { type, kind: 'date', value: value.toISOString() };
  if (Buffer.isBuffer(value)) return { type, kind: 'buffer', value: value.toString('hex') };
  return { type, kind: typeof value, value: String(value) };
}

function value(param) {
  if (param.value === null) return null;
  return param.type === 'varbinary' ? Buffer.from(param.value, 'hex') : param.value;
}

// one statement: calls done({results, error}) once
function run(statement, done) {
  const outcome = { results: [], error: null };
  let current = null;
  const request = new Request(statement.sql, (err) => {
    if (err) {
      outcome.results = [];
      outcome.error = err.number ?? -1;
    }
  });
  request.on('columnMetadata', () => {
    current = [];
    outcome.results.push(current);
  });
  request.on('row', (columns) => current.push(columns.map(convert)));
  if (statement.params.length === 0) {
    request.on('requestCompleted', () => done(outcome));
    connection.execSqlBatch(request);
    return;
  }
  statement.params.forEach((param, i) => request.addParameter(`p${i + 1}`, TYPE_OF[param.type]));
  const values = {};
  statement.params.forEach((param, i) => { values[`p${i + 1}`] = value(param); });
  let runs = 0;
  request.on('error', (err) => {  // the prepare failed
    outcome.error = err.number ?? -1;
    done(outcome);
  });
  request.on('prepared', () => connection.execute(request, values));
  request.on('requestCompleted', () => {
    runs += 1;
    if (runs < 2 && outcome.error === null) {
      outcome.results = [];  // the second run is the one reported
      connection.execute(request, values);
      return;
    }
    const unprepare = new Request('', () => done(outcome));
    unprepare.handle = request.handle;
    connection.unprepare(unprepare);
  });
  connection.prepare(request);
}

connection.on('connect', (err) => {
  if (err) {
    console.error(String(err && err.message));
    process.exit(2);
  }
  const outcomes = [];
  const next = (i) => {
    if (i === statements.length) {
      connection.close();
      process.stdout.write(JSON.stringify(outcomes));
      return;
    }
    run(statements[i], (outcome) => {
      outcomes.push(outcome);
      next(i + 1);
    });
  };
  next(0);
});
connection.connect();
