package guard

// ArgsDigestWithout is the SHA-256 (lowercase hex) of the call's canonical
// arguments minus one top-level key. It is the same canonical encoding the guard
// uses for args_hmac and the idempotency digest, exported so that a confirmation
// seal binds exactly what the guard will run (without "confirm") rather than a
// second canonicaliser's idea of it.
func ArgsDigestWithout(raw []byte, key string) string {
	return parseArgs(raw, false).digestWithout(key)
}
