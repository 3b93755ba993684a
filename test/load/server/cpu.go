package server

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"time"
)

// userHZ is the unit of the times in /proc/<pid>/stat. The kernel reports them in
// USER_HZ, which is 100 on every architecture Linux runs Go on (it is fixed by the
// ABI, unlike the kernel's own HZ).
const userHZ = 100

// ProcessCPU is the processor time the process pid has used so far, user and
// system, every thread, from /proc/<pid>/stat. The soak reads it for the server and
// for itself before and after the load: the two share the machine's cores, and what
// the load generator takes is not the server's to use.
func ProcessCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	return parseStatCPU(b)
}

// parseStatCPU reads utime and stime (fields 14 and 15) from a /proc/<pid>/stat
// line. The command name (field 2) is in parentheses and may hold spaces and
// parentheses itself, so the fields are counted from the last ')'.
func parseStatCPU(b []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc stat line without a command name: %q", b)
	}
	f := bytes.Fields(b[i+1:])
	// f[0] is field 3 (state), so field n is f[n-3].
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc stat line with %d fields after the command name, want at least 13", len(f))
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(string(s), 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("/proc stat line with a bad CPU time %q", s)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / userHZ, nil
}
