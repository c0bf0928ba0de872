package config

import (
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// The environment check. Every setting's variable begins with SERVICE_, a
// prefix other software uses too, and caarlos0/env reads only the names it
// knows: a misspelt SERVICE_OIDC_ENABLE would start the service in another
// mode than meant. So every SERVICE_* variable (in any case) that is not a
// setting is named at start with the nearest setting, and:
//
//   - a Kubernetes service link is passed over: it is not agentauth's. A
//     Service named "service" or "service-…" gives every pod of its
//     namespace <NAME>_SERVICE_HOST, <NAME>_SERVICE_PORT[_<PORTNAME>],
//     <NAME>_PORT and <NAME>_PORT_<n>_<PROTO>[_PROTO|_PORT|_ADDR], NAME
//     upper-cased with - as _. It is recognised by its name and its value
//     (an IP address, a port number, tcp://IP:port), so that a setting
//     misspelt into a link's shape (SERVICE_MANAGMENT_PORT=9090) is not;
//   - a name meant for agentauth stops the start (exit 2): within two
//     letters of a setting's name (underscores and case aside), or
//     beginning with a word only settings begin with (SERVICE_OIDC_…,
//     SERVICE_AUDIT_…, SERVICE_API…);
//   - any other (SERVICE_NAME, SERVICE_TAGS of a service registry) is
//     ignored with a warning in the log: refusing it would stop a
//     deployment for a variable that was never agentauth's.
//
// SERVICE_PORT and SERVICE_MANAGEMENT_PORT are both settings and link
// names (of Services named "service" and "service-management"); a link's
// tcp://IP:port there is not a port, and the refusal says where it came from.

type verdict int

const (
	known   verdict = iota // a setting, or not a SERVICE_* variable
	link                   // a Kubernetes service link: not agentauth's
	refused                // meant for agentauth: the start stops
	ignored                // another tool's, most likely: a warning
)

func (v verdict) String() string {
	return [...]string{"known", "link", "refused", "ignored"}[v]
}

const envPrefix = "SERVICE_"

// variableCheck is what the check found of one variable.
type variableCheck struct {
	name    string
	verdict verdict
	nearest Setting
}

func (c variableCheck) message() string {
	meant := c.nearest.Env
	if c.nearest.Key != "" {
		meant += " (" + c.nearest.Key + ")"
	}
	if c.verdict == refused {
		return fmt.Sprintf("%s is not a setting of agentauth; did you mean %s? Rename or unset it ('agentauth serve --help' lists every setting)", c.name, meant)
	}
	return fmt.Sprintf("%s is not a setting of agentauth and is ignored; the nearest setting is %s", c.name, meant)
}

// checkEnvironment returns the refusals, one per variable, in name order.
func checkEnvironment(environ map[string]string) []error {
	var out []error
	for _, name := range sortedNames(environ) {
		if c := checkVariable(name, environ[name]); c.verdict == refused {
			out = append(out, fmt.Errorf("%s", c.message()))
		}
	}
	return out
}

// IgnoredVariables are the warnings of the environment check: SERVICE_*
// variables that are not settings and not meant for agentauth, one line
// each, in name order.
func IgnoredVariables(environ map[string]string) []string {
	var out []string
	for _, name := range sortedNames(environ) {
		if c := checkVariable(name, environ[name]); c.verdict == ignored {
			out = append(out, c.message())
		}
	}
	return out
}

func sortedNames(environ map[string]string) []string {
	names := make([]string, 0, len(environ))
	for n := range environ {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func checkVariable(name, value string) variableCheck {
	upper := strings.ToUpper(name)
	if !strings.HasPrefix(upper, envPrefix) {
		return variableCheck{name: name, verdict: known}
	}
	if _, ok := settingByEnv(name); ok {
		return variableCheck{name: name, verdict: known}
	}
	if upper == name && isServiceLink(name, value) {
		return variableCheck{name: name, verdict: link}
	}
	nearest, distance := nearestSetting(upper)
	c := variableCheck{name: name, verdict: ignored, nearest: nearest}
	if distance <= 2 || slices.Contains(settingWords(), firstWord(upper)) {
		c.verdict = refused
	}
	return c
}

// firstWord is the word after SERVICE_ (OIDC of SERVICE_OIDC_ISSUER).
func firstWord(name string) string {
	w, _, _ := strings.Cut(strings.TrimPrefix(name, envPrefix), "_")
	return w
}

// settingWords are the words settings' variables begin with after SERVICE_.
func settingWords() []string {
	var out []string
	for _, s := range Settings {
		if strings.HasPrefix(s.Env, envPrefix) && !slices.Contains(out, firstWord(s.Env)) {
			out = append(out, firstWord(s.Env))
		}
	}
	return out
}

// nearestSetting is the setting whose variable is fewest edits from name,
// underscores aside (SERVICE_APIKEY is SERVICE_API_KEY); the first in the
// table's order among equals.
func nearestSetting(name string) (Setting, int) {
	squash := func(s string) string { return strings.ReplaceAll(strings.TrimPrefix(s, envPrefix), "_", "") }
	var best Setting
	bestDistance := -1
	for _, s := range Settings {
		if !strings.HasPrefix(s.Env, envPrefix) {
			continue
		}
		if d := editDistance(squash(name), squash(s.Env)); bestDistance < 0 || d < bestDistance {
			best, bestDistance = s, d
		}
	}
	return best, bestDistance
}

// editDistance is Levenshtein's distance between a and b (bytes: the
// names are ASCII).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// Kubernetes service links (pkg/kubelet/envvars): the variables of one
// Service, its prefix being its name upper-cased with - as _.
var (
	linkHost     = regexp.MustCompile(`^[A-Z0-9_]+_SERVICE_HOST$`)
	linkPort     = regexp.MustCompile(`^[A-Z0-9_]+_SERVICE_PORT(_[A-Z0-9_]+)?$`)
	linkURL      = regexp.MustCompile(`^[A-Z0-9_]+_PORT$`)
	linkPortURL  = regexp.MustCompile(`^[A-Z0-9_]+_PORT_([0-9]+)_(TCP|UDP|SCTP)$`)
	linkPortPart = regexp.MustCompile(`^[A-Z0-9_]+_PORT_([0-9]+)_(TCP|UDP|SCTP)_(PROTO|PORT|ADDR)$`)
)

// isServiceLink reports whether name=value is a variable Kubernetes sets
// for a Service: the name of one and a value of the shape it sets there.
func isServiceLink(name, value string) bool {
	// The most specific shape first: SERVICE_PORT_80_TCP_PORT also ends in _PORT.
	if m := linkPortPart.FindStringSubmatch(name); m != nil {
		switch m[3] {
		case "PROTO":
			return value == strings.ToLower(m[2])
		case "PORT":
			return value == m[1]
		default:
			return isIP(value)
		}
	}
	if m := linkPortURL.FindStringSubmatch(name); m != nil {
		return isLinkURL(value, strings.ToLower(m[2]), m[1])
	}
	switch {
	case linkHost.MatchString(name):
		return isIP(value)
	case linkPort.MatchString(name):
		return isPort(value)
	case linkURL.MatchString(name):
		return isLinkURL(value, "", "")
	}
	return false
}

func isIP(s string) bool {
	_, err := netip.ParseAddr(s)
	return err == nil
}

func isPort(s string) bool {
	n, err := strconv.Atoi(s)
	return err == nil && n > 0 && n <= 65535 && strconv.Itoa(n) == s
}

// isLinkURL reports whether s is proto://IP:port, as Kubernetes writes
// <NAME>_PORT; proto and port are checked when not empty.
func isLinkURL(s, proto, port string) bool {
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok || (proto != "" && scheme != proto) || !slices.Contains([]string{"tcp", "udp", "sctp"}, scheme) {
		return false
	}
	ap, err := netip.ParseAddrPort(rest)
	return err == nil && ap.Port() != 0 && (port == "" || strconv.Itoa(int(ap.Port())) == port)
}

// serviceLinkHint explains a setting's value that is a Kubernetes service
// link (SERVICE_PORT=tcp://10.96.0.12:80), else "".
func serviceLinkHint(name, value string) string {
	if !linkURL.MatchString(name) || !isLinkURL(value, "", "") {
		return ""
	}
	service := strings.ToLower(strings.ReplaceAll(strings.TrimSuffix(name, "_PORT"), "_", "-"))
	return fmt.Sprintf("; this is the Kubernetes service link of a Service named %q in the namespace: set %s in the pod's env (it wins over the link), or enableServiceLinks: false in the pod spec", service, name)
}
