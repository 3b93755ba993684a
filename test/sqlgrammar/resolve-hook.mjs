// dt-sql-parser's ESM build imports its own modules without file extensions
// ('./parser', '../common/basicSQL'), which bundlers resolve and Node.js does not.
// This resolve hook retries those imports, and only those, with '.js' and
// '/index.js'.
export async function resolve(specifier, context, next) {
  try {
    return await next(specifier, context);
  } catch (err) {
    const fromParser = context.parentURL?.includes('/node_modules/dt-sql-parser/');
    if (!fromParser || !specifier.startsWith('.')) throw err;
    for (const suffix of ['.js', '/index.js']) {
      try {
        return await next(specifier + suffix, context);
      } catch {
        // try the next form
      }
    }
    throw err;
  }
}
