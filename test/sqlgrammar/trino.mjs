// Reads [{"name", "sql"}] as JSON on stdin and prints [{"name", "errors"}]: the
// syntax errors dt-sql-parser's Trino grammar (TrinoSQL) finds in each statement.
// Run by trino_test.go.
import { register } from 'node:module';

register('./resolve-hook.mjs', import.meta.url);
const { TrinoSQL } = await import('dt-sql-parser');

let input = '';
for await (const chunk of process.stdin) input += chunk;
const parser = new TrinoSQL();
const out = JSON.parse(input).map(({ name, sql }) => ({
  name,
  errors: parser.validate(sql).map((e) => `line ${e.startLine}:${e.startColumn}: ${e.message}`),
}));
process.stdout.write(JSON.stringify(out));
