// Package keycloakserver runs the real Keycloak server (the distribution the
// official image holds, org.keycloak:keycloak-quarkus-dist) as a process on
// loopback, for the end-to-end suite and `go tool task quickstart:keycloak`.
//
// .ci/keycloak fetches the distribution once into the cache folder
// (~/.cache/agentauth-peers/keycloak-<Version>). The first Start prepares it,
// once per cache: `kc.sh start-dev` builds Keycloak's optimized server with
// the health endpoints, and the data folder of that first start (the master
// realm and its bootstrap admin, the database schema) is kept as a template.
// Every Start then runs in a folder of its own, with its own copy of data/,
// the realm file imported with its agentauth URLs moved to the caller's
// port, on free loopback ports, and is ready when /health/ready on the
// management port says so. Stop ends it by its process id.
package keycloakserver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Version is the Keycloak release .ci/keycloak fetches.
const Version = "26.7.3"

// realmFilePort is the port of agentauth's URLs in
// deploy/keycloak/realm-agents.json.
const realmFilePort = 18080

// Home is the unpacked distribution: $AGENTAUTH_PEERS_CACHE, else the
// user's cache folder's agentauth-peers, then keycloak-<Version>. It fails
// when .ci/keycloak has not fetched it.
func Home() (string, error) {
	cache := os.Getenv("AGENTAUTH_PEERS_CACHE")
	if cache == "" {
		c, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("keycloak: no cache folder (set AGENTAUTH_PEERS_CACHE): %w", err)
		}
		cache = filepath.Join(c, "agentauth-peers")
	}
	home := filepath.Join(cache, "keycloak-"+Version)
	if _, err := os.Stat(filepath.Join(home, "bin", "kc.sh")); err != nil {
		return "", fmt.Errorf("keycloak %s is not in %s: run `bash .ci/keycloak` (it fetches it from Maven Central with Maven; Keycloak needs Java 17 or later)", Version, home)
	}
	return home, nil
}

// Options say how to start Keycloak.
type Options struct {
	// RealmFile is a realm export to import (deploy/keycloak/realm-agents.json).
	RealmFile string
	// ServicePort is agentauth's port on 127.0.0.1: the realm file's
	// loopback URLs on 18080 (redirect URIs, web origins, back-channel
	// logout) are moved to it. 0 leaves them.
	ServicePort int
	// Port is Keycloak's HTTP port on 127.0.0.1 (0: a free one).
	Port int
	// AdminUser and AdminPassword are the master realm's bootstrap admin
	// (KC_BOOTSTRAP_ADMIN_USERNAME, KC_BOOTSTRAP_ADMIN_PASSWORD).
	AdminUser, AdminPassword string
	// Log receives Keycloak's output.
	Log io.Writer
	// Timeout bounds the start (preparing included); 0: 10 minutes.
	Timeout time.Duration
}

// Server is a running Keycloak.
type Server struct {
	// URL is its base URL, http://127.0.0.1:P; the issuer of a realm is
	// URL/realms/<name>, whatever host name a client calls it by.
	URL string
	// ManagementURL serves /health and /metrics.
	ManagementURL string
	dir           string
	cmd           *exec.Cmd
	exited        chan struct{}
}

// Issuer is the issuer URL of realm.
func (s *Server) Issuer(realm string) string { return s.URL + "/realms/" + realm }

// Exited is closed once the process has ended.
func (s *Server) Exited() <-chan struct{} { return s.exited }

// Start prepares the distribution if it has never been (see the package
// comment) and starts Keycloak, returning once it is ready.
func Start(ctx context.Context, o Options) (*Server, error) {
	if o.Timeout == 0 {
		o.Timeout = 10 * time.Minute
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	home, err := Home()
	if err != nil {
		return nil, err
	}
	template, err := prepare(ctx, home, o)
	if err != nil {
		return nil, err
	}
	realm, err := os.ReadFile(o.RealmFile)
	if err != nil {
		return nil, fmt.Errorf("keycloak: realm file: %w", err)
	}
	if o.ServicePort != 0 {
		realm = MoveServiceURLs(realm, o.ServicePort)
	}
	dir, err := os.MkdirTemp("", "agentauth-keycloak-")
	if err != nil {
		return nil, err
	}
	if err := layOut(home, dir, template); err == nil {
		err = os.WriteFile(filepath.Join(dir, "data", "import", filepath.Base(o.RealmFile)), realm, 0o600)
	}
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("keycloak: lay out %s: %w", dir, err)
	}
	s, err := run(ctx, dir, o, true)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

// Stop ends Keycloak (SIGTERM to its process, SIGKILL to its process group
// after 30 s), waits for it and removes its folder.
func (s *Server) Stop() error {
	var err error
	if s.cmd.Process.Signal(syscall.SIGTERM) == nil {
		select {
		case <-s.exited:
		case <-time.After(30 * time.Second):
			err = fmt.Errorf("keycloak: pid %d did not stop within 30 s of SIGTERM; killed", s.cmd.Process.Pid)
			_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
			<-s.exited
		}
	}
	if s.dir != "" {
		if rerr := os.RemoveAll(s.dir); err == nil {
			err = rerr
		}
	}
	return err
}

// MoveServiceURLs moves the realm file's loopback agentauth URLs (port
// 18080 on 127.0.0.1 and localhost) to port.
func MoveServiceURLs(realm []byte, port int) []byte {
	r := strings.NewReplacer(
		fmt.Sprintf("//127.0.0.1:%d", realmFilePort), fmt.Sprintf("//127.0.0.1:%d", port),
		fmt.Sprintf("//localhost:%d", realmFilePort), fmt.Sprintf("//localhost:%d", port),
	)
	return []byte(r.Replace(string(realm)))
}

// prepare builds the optimized server in home and keeps the data folder
// of a first start as the template of every later one, once per cache and
// bootstrap admin (a lock file orders concurrent first starts). It returns
// the template's folder.
func prepare(ctx context.Context, home string, o Options) (string, error) {
	sum := sha256.Sum256([]byte(o.AdminUser + "\x00" + o.AdminPassword))
	template := filepath.Join(home, "agentauth", fmt.Sprintf("data-%x", sum[:6]))
	if _, err := os.Stat(filepath.Join(template, "h2")); err == nil {
		return template, nil
	}
	if err := os.MkdirAll(filepath.Dir(template), 0o755); err != nil {
		return "", err
	}
	lock, err := os.OpenFile(filepath.Join(home, "agentauth", "prepare.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", err
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) //nolint:errcheck // closing releases it too
	if _, err := os.Stat(filepath.Join(template, "h2")); err == nil {
		return template, nil // prepared while this one waited
	}
	fmt.Fprintf(o.Log, "keycloak: preparing %s (once): building the server and its first data folder\n", home)
	if err := os.RemoveAll(filepath.Join(home, "data")); err != nil {
		return "", err
	}
	s, err := run(ctx, home, o, false)
	if err != nil {
		return "", fmt.Errorf("keycloak: preparing %s: %w", home, err)
	}
	if err := s.Stop(); err != nil {
		return "", err
	}
	tmp := template + ".partial"
	if err := os.RemoveAll(tmp); err != nil {
		return "", err
	}
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return "", err
	}
	if err := os.Rename(filepath.Join(home, "data", "h2"), filepath.Join(tmp, "h2")); err != nil {
		return "", err
	}
	if err := os.RemoveAll(filepath.Join(home, "data")); err != nil {
		return "", err
	}
	return template, os.Rename(tmp, template)
}

// layOut makes dir a Keycloak home of its own: kc.sh, conf and the
// optimized build (lib/quarkus) copied, the libraries, themes and providers
// linked, and a copy of the template data folder. kc.sh takes its home
// from its own path, so Keycloak writes only under dir.
func layOut(home, dir, template string) error {
	for _, d := range []string{"bin", "conf", "lib/quarkus", "data/h2", "data/import"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return err
		}
	}
	for _, l := range []string{"lib/lib", "lib/app", "themes", "providers"} {
		if err := os.Symlink(filepath.Join(home, l), filepath.Join(dir, l)); err != nil {
			return err
		}
	}
	for _, c := range []struct{ from, to string }{
		{filepath.Join(home, "bin", "kc.sh"), filepath.Join(dir, "bin", "kc.sh")},
		{filepath.Join(home, "version.txt"), filepath.Join(dir, "version.txt")},
		{filepath.Join(home, "lib", "quarkus-run.jar"), filepath.Join(dir, "lib", "quarkus-run.jar")},
	} {
		if err := copyFile(c.from, c.to); err != nil {
			return err
		}
	}
	for _, c := range []struct{ from, to string }{
		{filepath.Join(home, "conf"), filepath.Join(dir, "conf")},
		{filepath.Join(home, "lib", "quarkus"), filepath.Join(dir, "lib", "quarkus")},
		{filepath.Join(template, "h2"), filepath.Join(dir, "data", "h2")},
	} {
		if err := copyFiles(c.from, c.to); err != nil {
			return err
		}
	}
	return nil
}

// copyFiles copies the regular files of from (and of its folders) into
// to.
func copyFiles(from, to string) error {
	return filepath.WalkDir(from, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		return copyFile(path, filepath.Join(to, rel))
	})
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, fi.Mode().Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// run starts kc.sh start-dev of home (importing data/import's realm files
// when importRealms) and waits until /health/ready answers 200.
func run(ctx context.Context, home string, o Options, importRealms bool) (*Server, error) {
	port, err := freePort(o.Port)
	if err != nil {
		return nil, err
	}
	mgmt, err := freePort(0)
	if err != nil {
		return nil, err
	}
	s := &Server{
		URL:           fmt.Sprintf("http://127.0.0.1:%d", port),
		ManagementURL: fmt.Sprintf("http://127.0.0.1:%d", mgmt),
		exited:        make(chan struct{}),
	}
	if importRealms {
		s.dir = home
	}
	args := []string{"start-dev",
		"--http-host=127.0.0.1", "--http-port=" + strconv.Itoa(port), "--http-management-port=" + strconv.Itoa(mgmt),
		// Build option: the optimized server prepare made has it, so a
		// start with the same one needs no rebuild.
		"--health-enabled=true",
		// One issuer, http://127.0.0.1:P/realms/…, whichever name a client
		// reaches Keycloak by; the back-channel (token, keys) answers under
		// the name it was called by.
		"--hostname=" + s.URL, "--hostname-backchannel-dynamic=true",
	}
	if importRealms {
		args = append(args, "--import-realm")
	}
	s.cmd = exec.Command(filepath.Join(home, "bin", "kc.sh"), args...)
	s.cmd.Dir = home
	s.cmd.Env = environment(o)
	s.cmd.Stdout, s.cmd.Stderr = o.Log, o.Log
	// Its own process group: a terminal's Ctrl-C reaches the caller, who
	// stops Keycloak; Pdeathsig ends it if the caller dies first.
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("keycloak: start %s: %w", s.cmd.Path, err)
	}
	go func() { _ = s.cmd.Wait(); close(s.exited) }()
	if err := s.waitReady(ctx); err != nil {
		_ = s.Stop()
		return nil, err
	}
	return s, nil
}

// waitReady polls /health/ready until it answers 200, the process exits
// or ctx ends.
func (s *Server) waitReady(ctx context.Context) error {
	c := &http.Client{Timeout: 5 * time.Second}
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.ManagementURL+"/health/ready", nil)
		if res, err := c.Do(req); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-s.exited:
			return fmt.Errorf("keycloak: exited before it was ready (%v)", s.cmd.ProcessState)
		case <-ctx.Done():
			return fmt.Errorf("keycloak: not ready at %s/health/ready: %w", s.ManagementURL, ctx.Err())
		case <-tick.C:
		}
	}
}

// environment is kc.sh's whole environment: nothing of the caller's KC_*
// or JAVA_OPTS* settings is inherited.
func environment(o Options) []string {
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + os.Getenv("HOME"),
		"KC_BOOTSTRAP_ADMIN_USERNAME=" + o.AdminUser,
		"KC_BOOTSTRAP_ADMIN_PASSWORD=" + o.AdminPassword,
		// Only the client compiler: a test server starts in about two
		// thirds of the CPU time (24 s against 36 s here) and serves a test
		// run's few thousand requests as well.
		"JAVA_OPTS_APPEND=-XX:TieredStopAtLevel=1",
	}
	if tmp := os.Getenv("TMPDIR"); tmp != "" {
		env = append(env, "TMPDIR="+tmp)
	}
	if jh := JavaHome(); jh != "" {
		env = append(env, "JAVA_HOME="+jh)
	}
	return env
}

// JavaHome is the JDK Keycloak runs on: $KEYCLOAK_JAVA_HOME, else the
// newest JDK of 21 or later in /usr/lib/jvm (Keycloak's recommended
// versions), else $JAVA_HOME, else "" (kc.sh then runs the java on PATH;
// Java 17 works, deprecated by Keycloak).
func JavaHome() string {
	if jh := os.Getenv("KEYCLOAK_JAVA_HOME"); jh != "" {
		return jh
	}
	if jh := newestJDK("/usr/lib/jvm", 21); jh != "" {
		return jh
	}
	return os.Getenv("JAVA_HOME")
}

// newestJDK is the folder under root whose release file says the highest
// JAVA_VERSION of at least minMajor, with a bin/java; "" when none.
func newestJDK(root string, minMajor int) string {
	entries, _ := os.ReadDir(root)
	best, bestVersion := "", []int(nil)
	for _, e := range entries {
		dir := filepath.Join(root, e.Name())
		if _, err := os.Stat(filepath.Join(dir, "bin", "java")); err != nil {
			continue
		}
		v := releaseVersion(filepath.Join(dir, "release"))
		if len(v) == 0 || v[0] < minMajor || slices.Compare(v, bestVersion) <= 0 {
			continue
		}
		best, bestVersion = dir, v
	}
	return best
}

// releaseVersion reads JAVA_VERSION="25.0.3" of a JDK's release file.
func releaseVersion(file string) []int {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil
	}
	for line := range bytes.Lines(b) {
		v, ok := strings.CutPrefix(strings.TrimSpace(string(line)), "JAVA_VERSION=")
		if !ok {
			continue
		}
		var out []int
		for _, f := range strings.FieldsFunc(strings.Trim(v, `"`), func(r rune) bool { return r == '.' || r == '_' || r == '+' || r == '-' }) {
			n, err := strconv.Atoi(f)
			if err != nil {
				break
			}
			out = append(out, n)
		}
		return out
	}
	return nil
}

// freePort is port, or a port of 127.0.0.1 free a moment ago for 0.
func freePort(port int) (int, error) {
	if port != 0 {
		return port, nil
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
