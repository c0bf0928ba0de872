package main

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/valyala/fasthttp"
)

// proxyEnv, when set to an upstream URL, makes this program a bare reverse
// proxy to it instead of a load run (see bareProxy); proxyKindEnv names
// its HTTP stack.
const (
	proxyEnv     = "LOADGEN_REVERSE_PROXY_TO"
	proxyKindEnv = "LOADGEN_REVERSE_PROXY_KIND"
)

// The bare proxies' HTTP stacks: the standard library's, and fasthttp's,
// which the gateway's listener (Fiber) and upstream client use.
const (
	stdlibProxy   = "net/http"
	fasthttpProxy = "fasthttp"
)

// serveBareProxy forwards every request to the upstream with no
// authentication, no decision and no audit, on the HTTP stack kind,
// listening on a free 127.0.0.1 port that it prints on its first line.
func serveBareProxy(kind, upstream string) error {
	target, err := url.Parse(upstream)
	if err != nil {
		return err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Println(l.Addr().String())
	if kind == fasthttpProxy {
		hc := &fasthttp.HostClient{Addr: target.Host, MaxConns: 512}
		return fasthttp.Serve(l, func(c *fasthttp.RequestCtx) {
			if err := hc.Do(&c.Request, &c.Response); err != nil {
				c.Error(err.Error(), http.StatusBadGateway)
			}
		})
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 512, 256
	rp.Transport = tr
	srv := &http.Server{Handler: rp, ReadHeaderTimeout: 10 * time.Second}
	return srv.Serve(l)
}

// bareProxy starts this program again as a bare reverse proxy to upstream
// on the HTTP stack kind (see serveBareProxy): the floor of what a proxy
// in a process of its own costs on this machine, beside which the
// gateway's figures read. It returns the proxy's URL for upstream's path,
// its process, and the function that stops it.
func bareProxy(kind, upstream string) (string, *os.Process, func(), error) {
	self, err := os.Executable()
	if err != nil {
		return "", nil, nil, err
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), proxyEnv+"="+upstream, proxyKindEnv+"="+kind)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", nil, nil, err
	}
	stop := func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }
	addr, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		stop()
		return "", nil, nil, fmt.Errorf("bare proxy: %w", err)
	}
	u, _ := url.Parse(upstream)
	return "http://" + strings.TrimSpace(addr) + u.Path, cmd.Process, stop, nil
}
