package rest

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/wire"
	"go.uber.org/zap"

	"github.com/agentauth/agentauth/adapters/rest/console"
	"github.com/agentauth/agentauth/app"
	"github.com/agentauth/agentauth/domain"
)

// Config is what the edge needs to know about its deployment.
type Config struct {
	// Addr is host:port to listen on.
	Addr string
	// ManagementAddr is host:port of the management listener (probes and
	// metrics without credentials); empty: none.
	ManagementAddr string
	// PublicAddr is host:port of the public listener (agent-token
	// discovery, see public.go); empty: none.
	PublicAddr string
	// Debug marks every response with X-Auth-Debug: true.
	Debug bool
	// ShutdownTimeout bounds how long in-flight requests may take to
	// finish; it must be positive (its default is config.Defaults').
	ShutdownTimeout time.Duration
	// TrustedProxies are the proxies whose X-Forwarded-For names the
	// client (server.trustedProxies); empty: the socket peer is the client.
	TrustedProxies []netip.Prefix
	// Login serves the sign-in endpoints (OIDC logins, key sign-in) with
	// the Application's Login; nil leaves them out (hybrid mode).
	Login *Login
	// AgentTokens serves agent credentials; nil leaves them out.
	AgentTokens *AgentTokens
	// Gateway serves the MCP gateway (/mcp/{server}); nil leaves it out.
	Gateway *Gateway
	// Ready are the readiness checks (database, audit log); the identity
	// provider's come with Login.
	Ready ReadyChecks
	// BasePath is the path prefix every route is served under
	// (server.basePath, e.g. /agentauth); empty: the root.
	BasePath string
	// Redactor hides credentials in the request target the audit record
	// and the access log keep; nil: a rule with a key made at start, so
	// markers correlate within this process only.
	Redactor *domain.TargetRedactor
}

// Server is the Fiber application with its dependencies.
type Server struct {
	cfg Config
	// uc are the use cases the handlers call.
	uc      app.Application
	app     *fiber.App
	log     *zap.Logger
	metrics *httpMetrics
	// requestLog writes the access log: without the caller, which is
	// always the access-log stage and cost a stack walk per request.
	requestLog *zap.Logger
	// agentHeaders remembers the agent-token headers read (isAgentToken).
	agentHeaders agentHeaders
	// console renders the web console's pages, the sign-in page (the body
	// of a browser's 401) and error pages included.
	console *console.Console
	// loopbackOnly: the configured and the actual listen address are both
	// loopback, the only place debug principals are served.
	loopbackOnly atomic.Bool
	ready        *readiness
	redactor     *domain.TargetRedactor
	// exchangeLimit and introspectLimit bound each caller's requests to
	// the token and introspection endpoints.
	exchangeLimit, introspectLimit *windowLimiter
	// publicApp serves the public listener; nil without agent tokens.
	publicApp *fiber.App
}

// Set provides the server.
var Set = wire.NewSet(New)

// readBufferSize bounds request headers. Keycloak access tokens with many
// roles exceed fasthttp's 4 KiB default, so room is made for them on purpose.
const readBufferSize = 32 << 10

// New builds the application over the use cases of a and registers every
// route.
func New(cfg Config, a app.Application, log *zap.Logger) (*Server, error) {
	if err := cfg.validate(a); err != nil {
		return nil, fmt.Errorf("rest: %w", err)
	}
	if cfg.Login != nil {
		l := *cfg.Login
		l.uc = a.Login
		cfg.Login = &l
	}
	s := &Server{cfg: cfg, uc: a, log: log.Named("http")}
	s.requestLog = s.log.WithOptions(zap.WithCaller(false))
	s.ready = &readiness{checks: cfg.Ready}
	s.redactor = cfg.Redactor
	if s.redactor == nil {
		s.redactor = processRedactor()
	}
	if cfg.Login != nil {
		s.ready.oidc = cfg.Login.health
	}
	if cfg.AgentTokens != nil {
		s.exchangeLimit, s.introspectLimit = newWindowLimiter(cfg.AgentTokens.RateLimit), newWindowLimiter(cfg.AgentTokens.RateLimit)
	}
	s.metrics = newHTTPMetrics(s)
	s.console = console.New(a, console.Env{Principal: principalOf, RequestID: requestID, BasePath: cfg.BasePath, Note: note})
	s.app = fiber.New(s.fiberConfig())
	s.routes()
	if cfg.AgentTokens != nil {
		s.publicApp = s.newPublicApp()
	}
	return s, nil
}

// validate refuses a configuration the server cannot run with.
func (c Config) validate(a app.Application) error {
	var errs []error
	if c.ShutdownTimeout <= 0 {
		errs = append(errs, fmt.Errorf("shutdown timeout %s is not positive: %w", c.ShutdownTimeout, domain.ErrInvalidInput))
	}
	if c.Login != nil && a.Login == nil {
		errs = append(errs, fmt.Errorf("login endpoints (Config.Login) without the Application's Login use case: %w", domain.ErrInvalidInput))
	}
	return errors.Join(errs...)
}

// fiberConfig is the configuration of the API's and the public listener's
// applications.
func (s *Server) fiberConfig() fiber.Config {
	return fiber.Config{
		AppName:               "agentauth",
		DisableStartupMessage: true,
		ReadBufferSize:        readBufferSize,
		BodyLimit:             1 << 20,
		ReadTimeout:           30 * time.Second,
		WriteTimeout:          30 * time.Second,
		IdleTimeout:           120 * time.Second,
		ErrorHandler:          s.handleError,
	}
}

// route is one authenticated endpoint and the permission it needs.
type route struct {
	method  string
	path    string
	need    domain.Permission
	handler fiber.Handler
}

// apiRoutes lists every authenticated endpoint; each feature's file
// contributes its own list.
func (s *Server) apiRoutes() []route {
	return slices.Concat(
		[]route{{fiber.MethodGet, "/api/v2/me", domain.PermMeRead, s.me}},
		s.sessionRoutes(),
		s.auditRoutes(),
		s.settingsRoutes(),
		s.accessRoutes(),
		s.metricsRoutes(),
		s.agentTokenRoutes(),
		s.consoleRoutes(),
		s.keyRoutes(),
		s.gatewayAdminRoutes(),
		s.connectionRoutes(),
	)
}

// consoleRoutes are the console's pages and forms, behind the same
// authentication, permission check and audit record as the API. They are
// served with agent credentials (every mode of the binary).
func (s *Server) consoleRoutes() []route {
	if s.cfg.AgentTokens == nil {
		return nil
	}
	var out []route
	for _, r := range s.console.Routes() {
		out = append(out, route{r.Method, r.Path, r.Need, r.Handler})
	}
	return out
}

func (s *Server) routes() {
	s.app.Use(s.withRequestID, s.accessLog)
	if s.cfg.BasePath != "" {
		// Only global stages come before it, so that routing goes on from
		// the same place in the route tree of the rewritten path.
		s.app.Use(s.underBasePath)
	}
	s.healthRoutes()
	s.app.Use(s.audit, s.recoverPanic)
	s.loginRoutes() // public, but audited: logins and CSRF refusals are access decisions
	s.tokenEndpoints()
	s.app.Use(s.authenticate, s.gatewayOnly)
	for _, r := range s.apiRoutes() {
		s.app.Add(r.method, r.path, s.require(r.need), r.handler)
	}
	s.gatewayRoutes()
}

// processRedactor is the credential rule with a key of this process's
// own: markers then correlate within it only (tests; production wiring
// derives the key from the audit signing key).
func processRedactor() *domain.TargetRedactor {
	key := make([]byte, 32)
	_, _ = rand.Read(key) // never fails on supported platforms
	r, err := domain.NewTargetRedactor(key, nil)
	if err != nil {
		panic(err) // a 32-byte key and no names: unreachable
	}
	return r
}

// App exposes the Fiber application, for tests that use app.Test.
func (s *Server) App() *fiber.App { return s.app }

// Run serves until ctx ends, then stops accepting connections and waits for
// in-flight requests (and so their audit records) to finish.
func (s *Server) Run(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return &ListenError{Addr: s.cfg.Addr, Settings: "server.host / SERVICE_HOST, server.port / SERVICE_PORT", Err: err}
	}
	var mln, pln net.Listener
	if s.cfg.ManagementAddr != "" {
		if mln, err = net.Listen("tcp", s.cfg.ManagementAddr); err != nil {
			_ = ln.Close()
			return &ListenError{Addr: s.cfg.ManagementAddr, Settings: "server.managementHost / SERVICE_MANAGEMENT_HOST, server.managementPort / SERVICE_MANAGEMENT_PORT", Err: err}
		}
	}
	if s.cfg.PublicAddr == "" && s.publicApp != nil {
		s.log.Info("agent-token discovery is not served: no public listener (server.publicPort); tool servers read the key set on the management listener or with a credential")
	}
	if s.cfg.PublicAddr != "" && s.publicApp != nil {
		if pln, err = net.Listen("tcp", s.cfg.PublicAddr); err != nil {
			_ = ln.Close()
			if mln != nil {
				_ = mln.Close()
			}
			return &ListenError{Addr: s.cfg.PublicAddr, Settings: "server.publicHost / SERVICE_PUBLIC_HOST, server.publicPort / SERVICE_PUBLIC_PORT", Err: err}
		}
	}
	return s.ServeListeners(ctx, ln, mln, pln)
}

// ListenError is a listener Run could not open: the port is taken or the
// address is not this machine's. Nothing was served; the command treats it
// as a problem of the settings it names.
type ListenError struct {
	Addr     string
	Settings string
	Err      error
}

func (e *ListenError) Error() string {
	return fmt.Sprintf("%s: cannot listen on %s: %v", e.Settings, e.Addr, e.Err)
}

func (e *ListenError) Unwrap() error { return e.Err }

// ServeWithManagement is Serve with the management listener on mln.
func (s *Server) ServeWithManagement(ctx context.Context, ln, mln net.Listener) error {
	return s.ServeListeners(ctx, ln, mln, nil)
}

// ServeListeners is Serve with the management listener on mln and the
// public listener on pln (either nil: none). Both answer until the API
// listener has drained; if one fails, the service stops.
func (s *Server) ServeListeners(ctx context.Context, ln, mln, pln net.Listener) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	drained := make(chan struct{})
	var side []chan error
	run := func(serve func(context.Context, net.Listener, <-chan struct{}) error, l net.Listener) {
		done := make(chan error, 1)
		side = append(side, done)
		go func() {
			err := serve(ctx, l, drained)
			if err != nil {
				cancel()
			}
			done <- err
		}()
	}
	if mln != nil {
		run(s.serveManagement, mln)
	}
	if pln != nil {
		if s.publicApp == nil {
			_ = pln.Close()
			return errors.New("public listener: agent tokens are off")
		}
		run(s.servePublic, pln)
	}
	err := s.Serve(ctx, ln)
	close(drained)
	cancel()
	for _, done := range side {
		err = errors.Join(err, <-done)
	}
	return err
}

// Serve is Run on an existing listener.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	s.loopbackOnly.Store(listensOnLoopback(s.cfg.Addr, ln.Addr()))
	s.log.Info("listening", zap.String("url", "http://"+ln.Addr().String()))
	_ = s.log.Sync() // the log is buffered; say at once that we are up
	served := make(chan error, 1)
	go func() { served <- s.app.Listener(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	s.ready.stopping.Store(true)
	s.log.Info("shutting down: finishing in-flight requests")
	if s.uc.MCP != nil {
		s.uc.MCP.Stop() // relayed streams and held calls end now, not at their own timeouts
	}
	if err := s.app.ShutdownWithTimeout(s.cfg.ShutdownTimeout); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("shutdown: %w", err)
	}
	// A shutdown that comes before the server has taken the listener over
	// does not stop it; closing the listener does, in every case.
	_ = ln.Close()
	if err := <-served; err != nil && !errors.Is(err, net.ErrClosed) {
		return err
	}
	return nil
}

// listensOnLoopback reports whether both the configured address (host:port)
// and the listener's actual address name only this machine. An empty or
// unparsable one is not loopback: debug principals are then refused.
func listensOnLoopback(configured string, actual net.Addr) bool {
	host, _, err := net.SplitHostPort(configured)
	if err != nil || !isLoopbackHost(host) {
		return false
	}
	tcp, ok := actual.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}
