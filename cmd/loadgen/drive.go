package main

import (
	"fmt"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

type header struct{ name, value string }

type request struct {
	method, url, body string
	header            header
	more              []header // further headers
	// server is the pid of the process whose CPU per request is reported
	// (0: none).
	server int
}

type result struct {
	ok, failed int64
	lastErr    string
	rps        float64
	p50, p99   time.Duration
	// cpu is the server's CPU time (user and system) per successful
	// request over the measurement; 0 when r.server is 0.
	cpu time.Duration
}

// drive sends r from conns workers for d after warmup; a 2xx answer counts
// as success. Every 16th latency is kept for the percentiles.
func drive(r request, conns int, warmup, d time.Duration) result {
	client := &fasthttp.Client{MaxConnsPerHost: conns, ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second}
	var (
		ok, failed atomic.Int64
		lastErr    atomic.Value
		measuring  atomic.Bool
		mu         sync.Mutex
		latencies  []time.Duration
		wg         sync.WaitGroup
	)
	start := time.Now()
	measureFrom, deadline := start.Add(warmup), start.Add(warmup+d)
	type cpuReading struct {
		t  time.Duration
		ok bool
	}
	cpuFrom := make(chan cpuReading, 1)
	go func() {
		time.Sleep(warmup)
		t, ok := serverCPU(r.server)
		cpuFrom <- cpuReading{t, ok}
	}()
	for range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, res := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(res)
			req.Header.SetMethod(r.method)
			req.SetRequestURI(r.url)
			for _, h := range append([]header{r.header}, r.more...) {
				if h.name != "" {
					req.Header.Set(h.name, h.value)
				}
			}
			if r.body != "" {
				req.Header.SetContentType("application/json")
				req.SetBodyString(r.body)
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
				if code := res.StatusCode(); err != nil || code < 200 || code > 299 {
					failed.Add(1)
					lastErr.Store(fmt.Sprintf("%v %d %.200s", err, code, res.Body()))
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
	out := result{ok: ok.Load(), failed: failed.Load(), rps: float64(ok.Load()) / d.Seconds()}
	from := <-cpuFrom
	if to, ok := serverCPU(r.server); ok && from.ok && out.ok > 0 {
		out.cpu = (to - from.t) / time.Duration(out.ok)
	}
	if e, _ := lastErr.Load().(string); e != "" {
		out.lastErr = e
	}
	sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
	if n := len(latencies); n > 0 {
		out.p50, out.p99 = latencies[n/2], latencies[n*99/100]
	}
	return out
}

type response struct {
	body    []byte
	cookies []string
	session string // Mcp-Session-Id
}

// call sends one request and returns the body of a 2xx answer.
func call(method, url, body string, h header) ([]byte, error) {
	res, err := callFull(method, url, body, h)
	return res.body, err
}

func callFull(method, url, body string, h header) (response, error) {
	req, res := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(res)
	req.Header.SetMethod(method)
	req.SetRequestURI(url)
	if h.name != "" {
		req.Header.Set(h.name, h.value)
	}
	if body != "" {
		if h.name != "Content-Type" {
			req.Header.SetContentType("application/json")
		}
		req.SetBodyString(body)
	}
	if err := fasthttp.DoTimeout(req, res, 30*time.Second); err != nil {
		return response{}, err
	}
	if code := res.StatusCode(); code < 200 || code > 299 {
		return response{}, fmt.Errorf("%s %s: %d %.300s", method, url, code, res.Body())
	}
	out := response{body: append([]byte(nil), res.Body()...), session: string(res.Header.Peek("Mcp-Session-Id"))}
	res.Header.VisitAllCookie(func(_, v []byte) { out.cookies = append(out.cookies, string(v)) })
	return out, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// serverCPU is the CPU time pid has used, and whether it could be read
// (not for pid 0: no server to count).
func serverCPU(pid int) (time.Duration, bool) {
	if pid == 0 {
		return 0, false
	}
	t, err := cpuTime(pid)
	return t, err == nil
}

// rssMB is the resident set of process pid in MB (VmRSS).
func rssMB(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 64)
			return kb / 1024
		}
	}
	return 0
}

type rssFigures struct {
	idle, peak float64
}

// watch samples the RSS of pid every 100 ms into peak until stopped.
func (f *rssFigures) watch(pid int) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			if v := rssMB(pid); v > f.peak {
				f.peak = v
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() { close(done); <-finished }
}
