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
}

type result struct {
	ok, failed int64
	lastErr    string
	rps        float64
	p50, p99   time.Duration
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
	for range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, res := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(res)
			req.Header.SetMethod(r.method)
			req.SetRequestURI(r.url)
			if r.header.name != "" {
				req.Header.Set(r.header.name, r.header.value)
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
	out := response{body: append([]byte(nil), res.Body()...)}
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
