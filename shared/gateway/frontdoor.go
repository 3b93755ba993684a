package gateway

import (
	"bufio"
	"errors"
	"net"
	"net/http"
)

// RestoredHeader is the one header FrontDoor gives back its name.
const RestoredHeader = "WWW-Authenticate"

// FrontDoor models the CloudFront distribution docs/decisions.md ("Challenges and
// discovery through API Gateway") puts in front of the REST API, which infra does not
// build yet: a Lambda@Edge
// origin-response function renames X-Amzn-Remapped-WWW-Authenticate back to
// WWW-Authenticate, so the 401 and 403 challenges the MCP function writes reach
// OAuth clients. CloudFront runs origin-response functions for error answers too
// (its viewer-response functions, and CloudFront Functions, it does not run for
// an origin status of 400 or more, which is why a CloudFront Function cannot do
// this). A challenge API Gateway set itself (a gateway response) passes unchanged.
//
// Only the challenge is restored: the other remapped headers (Date, Server, ...)
// are ones the function has no reason to send.
func FrontDoor(api http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		api.ServeHTTP(&restoring{ResponseWriter: w}, r)
	})
}

// restoring renames the header just before the status line goes out, which is
// when an origin response is complete enough for the edge function to see it.
type restoring struct {
	http.ResponseWriter
	wrote bool
}

func (w *restoring) WriteHeader(code int) {
	if !w.wrote {
		w.wrote = true
		restore(w.Header())
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *restoring) Write(b []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

// Flush and Hijack keep what the wrapped writer can do.
func (w *restoring) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		if !w.wrote {
			w.WriteHeader(http.StatusOK)
		}
		f.Flush()
	}
}

func (w *restoring) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if h, ok := w.ResponseWriter.(http.Hijacker); ok {
		return h.Hijack()
	}
	return nil, nil, errors.New("gateway: the response writer cannot be hijacked")
}

// restore is the origin-response function's whole logic (the Lambda@Edge code, when
// infra has it, must do exactly this): move the remapped challenge back unless the origin set the
// real header itself.
func restore(h http.Header) {
	remapped := http.CanonicalHeaderKey(RemappedPrefix + RestoredHeader)
	vs := h.Values(remapped)
	if len(vs) == 0 {
		return
	}
	h.Del(remapped)
	if len(h.Values(RestoredHeader)) == 0 {
		h[http.CanonicalHeaderKey(RestoredHeader)] = vs
	}
}
