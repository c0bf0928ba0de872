package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/agentauth/agentauth/config"
	"github.com/agentauth/agentauth/domain"
)

const policyUsage = `Usage:
  agentauth policy can --role ROLE --action ACTION --resource RESOURCE [--config FILE]
  agentauth policy can --role ROLE --action RESOURCE:ACTION [--config FILE]
  agentauth policy can --tool TOOL [--args JSON] [--role ROLE]... [--subject S] [--project P]
                       [--mode auto|ask|readonly] [--depth N] [--server NAME] [--url URL]

Answers, offline, whether ROLE may perform ACTION on RESOURCE under the role
matrix and the custom roles (auth.roles) of the configuration, and why.
With --tool, asks the running service (--url, default http://127.0.0.1:8080;
the key from AGENTAUTH_KEY, else the local key file of serve's data folder)
which tool rule decides a call of TOOL with these arguments, and why, with
what each matching rule said (GET /api/v2/policies/simulate; the key's
role needs policies:read).
Exit status: 0 allow, 1 deny (or ask), 2 usage or configuration error.

Example:
  agentauth policy can --tool fs.write --args '{"path":"/srv/a","env":"prod"}' --role USER
  agentauth policy can --role USER --action write --resource policies
  deny: role USER lacks policies:write
  agentauth policy can --role ADMIN --action settings:read
  allow: role ADMIN grants settings:read (read service settings)
`

// policy runs "agentauth policy ...".
func policy(args []string, env map[string]string, stdout, stderr io.Writer) int {
	if wantsHelp(args) {
		fmt.Fprint(stdout, policyUsage)
		return exitOK
	}
	if len(args) == 0 || args[0] != "can" {
		fmt.Fprint(stderr, policyUsage)
		return exitUsage
	}
	for _, a := range args[1:] {
		if a == "--tool" || a == "-tool" || strings.HasPrefix(a, "--tool=") || strings.HasPrefix(a, "-tool=") {
			return policyCanTool(args[1:], env, stdout, stderr)
		}
	}
	fs := flag.NewFlagSet("policy can", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, policyUsage) }
	role := fs.String("role", "", "role name: ADMIN, USER, LEAD, AUDITOR or a custom role")
	action := fs.String("action", "", "action, such as read or write, or a whole permission such as settings:read")
	resource := fs.String("resource", "", "resource, such as sessions or policies (implied when --action is a permission)")
	cfgPath := fs.String("config", "", "YAML config file with custom roles (SERVICE_CONFIG)")
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if *role == "" || *action == "" || fs.NArg() > 0 {
		fmt.Fprint(stderr, "agentauth policy can: --role and --action are required\n\n"+policyUsage)
		return exitUsage
	}
	permText, err := domain.PermissionOf(*action, *resource, "--action", "--resource")
	if err != nil {
		fmt.Fprintf(stderr, "agentauth policy can: %v\n", err)
		return exitUsage
	}
	path := env["SERVICE_CONFIG"]
	if *cfgPath != "" {
		path = *cfgPath
	}
	cfg, err := config.Load(path, env)
	if err == nil {
		_, err = cfg.Authorizer()
	}
	if err != nil {
		fmt.Fprintf(stderr, "agentauth: configuration is not valid:\n%s\n", indent(err.Error()))
		return exitUsage
	}
	authz, _ := cfg.Authorizer()
	r := domain.Role(strings.ToUpper(strings.TrimSpace(*role)))
	if !authz.Knows(r) {
		fmt.Fprintf(stderr, "agentauth policy can: unknown role %q; known roles: %s\n", *role, joinRoles(authz.Roles()))
		return exitUsage
	}
	perm, err := domain.ParsePermission(permText)
	if err != nil {
		fmt.Fprintf(stderr, "agentauth policy can: %v; known permissions: %s\n", err, joinPerms(domain.AllPermissions()))
		return exitUsage
	}
	d := authz.Decide([]domain.Role{r}, perm)
	if d.Allowed {
		fmt.Fprintf(stdout, "allow: %s (%s)\n", d.Reason(), perm.Describe())
		return exitOK
	}
	fmt.Fprintf(stdout, "deny: %s\n", d.Reason())
	return exitFailure
}

func joinRoles(roles []domain.Role) string {
	s := make([]string, len(roles))
	for i, r := range roles {
		s[i] = string(r)
	}
	return strings.Join(s, ", ")
}

func joinPerms(perms []domain.Permission) string {
	s := make([]string, len(perms))
	for i, p := range perms {
		s[i] = string(p)
	}
	return strings.Join(s, ", ")
}
