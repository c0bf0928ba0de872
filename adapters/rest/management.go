package rest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"go.uber.org/zap"
)

// The management listener (server.managementPort, off by default) serves
// what the platform asks, without credentials and without audit records,
// on an address of its own that need not be reachable from outside the
// cluster: GET /health/live, GET /health/ready and GET /metrics. It is
// plain net/http, apart from the API's Fiber application, so that a busy or
// stuck API listener does not take the probes with it.

// ManagementHandler serves the management endpoints.
func (s *Server) ManagementHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health/live", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(okBody)
	})
	mux.HandleFunc("GET /health/ready", s.serveReady)
	mux.Handle("GET /metrics", s.metrics.served)
	s.managementKeys(mux)
	s.managementGateway(mux)
	return mux
}

// serveReady answers 200 when every check passes, else 503; both list each
// check with what is wrong, in full.
func (s *Server) serveReady(w http.ResponseWriter, r *http.Request) {
	ready, checks := s.ready.report(r.Context())
	body := struct {
		Status string            `json:"status"`
		Checks map[string]string `json:"checks"`
	}{"ok", checks}
	w.Header().Set("Content-Type", "application/json")
	if !ready {
		body.Status = "degraded"
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	_ = json.NewEncoder(w).Encode(body)
}

// serveManagement runs the management listener on ln until ctx ends, then
// waits for stop (the API listener has drained) before closing it, so that
// probes keep answering (not ready) while requests finish.
func (s *Server) serveManagement(ctx context.Context, ln net.Listener, stop <-chan struct{}) error {
	srv := &http.Server{
		Handler:           s.ManagementHandler(),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    16 << 10,
	}
	s.log.Info("management listener", zap.String("url", "http://"+ln.Addr().String()))
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("management listener: %w", err)
	case <-ctx.Done():
	}
	<-stop
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutdownCtx)
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("management listener: %w", err)
	}
	return nil
}
