package file

import "time"

// ScanFrom is Scan over the partitions of from's hour and later only, so that a
// reader of the recent past (the usage replay on start) does not read the whole
// log. Records are filed by their own timestamp, so every record at or after from
// is seen; records of from's hour that precede it are passed to fn as well.
func ScanFrom(dir string, from time.Time, fn func(Entry) error) error {
	return scanSince(dir, from.UTC().Truncate(time.Hour), fn)
}
