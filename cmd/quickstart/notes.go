package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/agentauth/agentauth/internal/notes"
)

// runNotes is quickstart notes: the sample MCP server alone, at
// http://{addr}/mcp, until Ctrl-C.
func runNotes(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("quickstart notes", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8090", "where it listens (port 0: any free port)")
	tokenFile := fs.String("token-file", "", "a file holding the credential it asks callers for (Authorization: Bearer); none: it asks for none")
	if err := fs.Parse(args); err != nil {
		return err
	}
	token := ""
	if *tokenFile != "" {
		b, err := os.ReadFile(*tokenFile)
		if err != nil {
			return err
		}
		if token = strings.TrimSpace(string(b)); token == "" {
			return fmt.Errorf("-token-file %s is empty", *tokenFile)
		}
	}
	l, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("-addr %s: %w", *addr, err)
	}
	url, stopServer := serveNotes(l, notes.NewStore(), token)
	defer stopServer()
	fmt.Fprintf(stdout, "Notes MCP server: %s (tools %s, %s, %s); Ctrl-C stops it\n", url, notes.Read, notes.Write, notes.Delete)
	<-ctx.Done()
	return nil
}

// serveNotes serves the sample server at /mcp on l and returns its URL
// and how to stop it.
func serveNotes(l net.Listener, store *notes.Store, token string) (string, func()) {
	mux := http.NewServeMux()
	mux.Handle("/mcp", notes.Handler(store, token))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintln(os.Stderr, "quickstart: the notes server:", err)
		}
	}()
	return "http://" + l.Addr().String() + "/mcp", func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}
}
