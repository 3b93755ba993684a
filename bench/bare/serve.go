package bare

import (
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/mark3labs/mcp-go/server"
)

// Transport is the HTTP side of every bare peer (this one and bench/barewrite):
// mcp-go's Streamable HTTP at /mcp, stateless, answering in JSON without SSE, as
// aacmcp serves it, so that the peers differ from aacmcp only in what runs behind
// the transport.
func Transport(m *server.MCPServer) http.Handler {
	return server.NewStreamableHTTPServer(m,
		server.WithStateLess(true),
		server.WithEndpointPath("/mcp"),
		server.WithDisableStreaming(true),
		server.WithDisableLocalhostProtection(true),
	)
}

// Serve listens on addr, prints "listening http://ADDR" on stdout once it accepts
// connections (the line make bench waits for), and serves h.
func Serve(addr string, h http.Handler) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	fmt.Printf("listening http://%s\n", ln.Addr())
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	return srv.Serve(ln)
}
