//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"
)

// keycloakImage is the official Keycloak image the suite runs against when
// a container engine answers.
const keycloakImage = "quay.io/keycloak/keycloak:26.0"

// startKeycloak starts the official image with the realm file imported, its
// service redirect URIs moved to servicePort (a copy written in dir), and
// returns its base URL (http://127.0.0.1:P) and a function that removes it.
func startKeycloak(ctx context.Context, dir string, servicePort int) (string, func(), error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	realm, err := os.ReadFile(filepath.Join(repo, "deploy", "keycloak", "realm-agents.json"))
	if err != nil {
		return "", nil, err
	}
	moved := strings.NewReplacer(
		fmt.Sprintf("//127.0.0.1:%d", realmFilePort), fmt.Sprintf("//127.0.0.1:%d", servicePort),
		fmt.Sprintf("//localhost:%d", realmFilePort), fmt.Sprintf("//localhost:%d", servicePort),
	).Replace(string(realm))
	realmFile := filepath.Join(dir, "realm-agents.json")
	if err := os.WriteFile(realmFile, []byte(moved), 0o644); err != nil {
		return "", nil, err
	}
	req := testcontainers.ContainerRequest{
		Image:        keycloakImage,
		ExposedPorts: []string{"8080/tcp"},
		Env: map[string]string{
			"KC_BOOTSTRAP_ADMIN_USERNAME": "admin",
			"KC_BOOTSTRAP_ADMIN_PASSWORD": "admin",
		},
		Cmd: []string{"start-dev", "--import-realm"},
		Files: []testcontainers.ContainerFile{{
			HostFilePath:      realmFile,
			ContainerFilePath: "/opt/keycloak/data/import/realm-agents.json",
			FileMode:          0o644,
		}},
		WaitingFor: wait.ForHTTP("/realms/" + realmName + "/.well-known/openid-configuration").
			WithPort("8080/tcp").WithStartupTimeout(4 * time.Minute),
	}
	c, err := testcontainers.GenericContainer(ctx, testcontainers.GenericContainerRequest{ContainerRequest: req, Started: true})
	if err != nil {
		return "", nil, fmt.Errorf("start %s: %w", keycloakImage, err)
	}
	stop := func() { _ = testcontainers.TerminateContainer(c) }
	port, err := c.MappedPort(ctx, "8080/tcp")
	if err != nil {
		stop()
		return "", nil, err
	}
	// Keycloak in dev mode names its issuer after the request's host, so
	// every client uses this one address.
	return "http://127.0.0.1:" + port.Port(), stop, nil
}
