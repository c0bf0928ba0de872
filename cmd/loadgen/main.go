// Command loadgen measures agentauth on loopback: it builds and starts the
// server in API-key mode on a fresh data folder, drives GET /health and then
// the authenticated, authorized and audited GET /api/v2/sessions with many
// keep-alive connections, and prints requests per second of each and their
// ratio. Client and server share the machine, so compare ratios, not
// absolute figures, across machines.
//
//	go run ./cmd/loadgen [-duration 5s] [-conns 64]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/agentauth/agentauth/internal/launch"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
}

const apiKey = "loadgen-key-0123456789abcdef"

func run() error {
	duration := flag.Duration("duration", 5*time.Second, "how long to drive each endpoint")
	conns := flag.Int("conns", 64, "concurrent keep-alive connections")
	path := flag.String("path", "/api/v2/sessions", "the authenticated endpoint to compare with /health")
	databaseURL := flag.String("database-url", "", "PostgreSQL URL (SERVICE_DATABASE_URL); empty: the embedded SQLite store")
	flag.Parse()

	tmp, err := os.MkdirTemp("", "agentauth-loadgen")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bin, err := launch.Build(context.Background(), ".", tmp)
	if err != nil {
		return err
	}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + tmp, "SERVICE_DATA_DIR=" + tmp, "SERVICE_PORT=0",
		"SERVICE_API_KEY=" + apiKey, "SERVICE_DATABASE_URL=" + *databaseURL}
	p, err := launch.Start(bin, env, 30*time.Second, "serve")
	if err != nil {
		return err
	}
	defer p.Kill()

	fmt.Printf("agentauth at %s; %d connections, %s per endpoint\n", p.URL, *conns, *duration)
	health := drive(p.URL+"/health", "", *conns, *duration)
	fmt.Println(health.line("GET /health"))
	sessions := drive(p.URL+*path, apiKey, *conns, *duration)
	fmt.Println(sessions.line("GET " + *path + " (API key, authorized, audited)"))
	if health.rps > 0 {
		fmt.Printf("ratio: authenticated+audited / health = %.0f%%\n", 100*sessions.rps/health.rps)
	}
	if code, err := p.Stop(30 * time.Second); err != nil || code != 0 {
		return fmt.Errorf("server stop: exit %d, %v", code, err)
	}
	return nil
}

type result struct {
	ok, failed int64
	rps        float64
	p50, p99   time.Duration
}

func (r result) line(name string) string {
	return fmt.Sprintf("%-55s %9.0f req/s  p50 %-9s p99 %-9s ok %d failed %d", name, r.rps, r.p50, r.p99, r.ok, r.failed)
}

// drive sends GET url from conns workers for d after a short warm-up.
func drive(url, key string, conns int, d time.Duration) result {
	client := &fasthttp.Client{MaxConnsPerHost: conns, ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second}
	var (
		ok, failed atomic.Int64
		measuring  atomic.Bool
		mu         sync.Mutex
		latencies  []time.Duration
		wg         sync.WaitGroup
	)
	deadline := time.Now().Add(d + time.Second)
	measureFrom := time.Now().Add(time.Second) // warm-up: connections, caches, page cache
	for w := 0; w < conns; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, res := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(res)
			req.SetRequestURI(url)
			if key != "" {
				req.Header.Set("Authorization", "Bearer "+key)
			}
			var mine []time.Duration
			for i := 0; i < 10_000_000; i++ { // bounded whatever happens
				now := time.Now()
				if now.After(deadline) {
					break
				}
				if !measuring.Load() && now.After(measureFrom) {
					measuring.Store(true)
				}
				err := client.Do(req, res)
				if !measuring.Load() {
					continue
				}
				if err != nil || res.StatusCode() != fasthttp.StatusOK {
					failed.Add(1)
					continue
				}
				ok.Add(1)
				if i%16 == 0 {
					mine = append(mine, time.Since(now))
				}
			}
			mu.Lock()
			latencies = append(latencies, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	r := result{ok: ok.Load(), failed: failed.Load(), rps: float64(ok.Load()) / d.Seconds()}
	sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
	if n := len(latencies); n > 0 {
		r.p50, r.p99 = latencies[n/2], latencies[n*99/100]
	}
	return r
}
