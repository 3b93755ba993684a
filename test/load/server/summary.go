package server

// Summary is what the load test writes with -summary once every check has passed,
// and what make bench reads for its report (bench/cmd/bench soak.go): one run's
// figures. Latencies are in milliseconds.
type Summary struct {
	Clients int `json:"clients"`
	// Client is the load generator's HTTP client: "plain" (NewPlainClient) or
	// "net/http" (NewClient).
	Client      string  `json:"client"`
	Calls       int     `json:"calls"`
	Seconds     float64 `json:"seconds"`
	CallsPerSec float64 `json:"calls_per_second"`
	// Mean is the answered calls' mean latency. With closed-loop clients (each
	// calls again as soon as it is answered) it is at most Clients/CallsPerSec
	// (Little's law), which is what bounds the quantiles from below.
	Mean float64 `json:"mean_ms"`
	P50  float64 `json:"p50_ms"`
	P95  float64 `json:"p95_ms"`
	P99  float64 `json:"p99_ms"`
	Max  float64 `json:"max_ms"`
	// ServerCPU and LoadCPU are the processor seconds that aacmcp serve and the load
	// generator (the test process: clients, checks of each answer, bookkeeping) used
	// during the load. They share the machine's cores, so LoadCPU/Seconds cores were
	// not the server's to use.
	ServerCPU float64 `json:"server_cpu_seconds"`
	LoadCPU   float64 `json:"load_generator_cpu_seconds"`
	// SlowestWrites is the share of writes among the slowest 1% of the calls.
	SlowestWrites float64       `json:"slowest_1pct_writes_share"`
	Tools         []ToolLatency `json:"tools"` // slowest p95 first
}

// ToolLatency is one tool's answered calls and their latency quantiles.
type ToolLatency struct {
	Tool  string  `json:"tool"`
	Calls int     `json:"calls"`
	P50   float64 `json:"p50_ms"`
	P95   float64 `json:"p95_ms"`
	P99   float64 `json:"p99_ms"`
}
