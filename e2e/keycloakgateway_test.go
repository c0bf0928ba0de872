//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/Nerzal/gocloak/v13"
)

// TestKeycloakGatewayResource: an MCP client registered in Keycloak gets
// an access token for alice whose audience is the gateway resource of
// server fs, {gateway.resourceURL}/mcp/fs, and not agentauth's client.
// Keycloak 26.7 takes no RFC 8707 resource parameter, so the client (made
// here through the admin API) carries an audience mapper naming the
// resource, as an operator would configure it. agentauth admits the token
// for that endpoint alone (checkGatewayResourceToken); a token whose
// audience is a near miss of the resource (/mcpx/fs) is not admitted.
func TestKeycloakGatewayResource(t *testing.T) {
	p := keycloak(t)
	creds := t.TempDir()
	if err := os.WriteFile(filepath.Join(creds, "fs-token"), []byte(mcpUpstreamSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startService(t, p, 0, "SERVICE_GATEWAY_CREDENTIALS_DIR="+creds)
	s.waitReady(t)
	u := startMCPUpstream(t)
	resource := s.url + "/mcp/fs" // gateway.resourceURL defaults to the API's URL

	admin := grant(t, p, realmName, clientID, clientSecret, "alice", "alice-pw").AccessToken
	session, agent := setUpGateway(t, s, admin, u.url, resource)

	createClient(t, p, realmName, "mcp-client", resource)
	createClient(t, p, realmName, "mcp-near-miss", s.url+"/mcpx/fs")
	tok := grant(t, p, realmName, "mcp-client", "mcp-client-e2e-secret", "alice", "alice-pw").AccessToken
	c := payloadClaims(t, tok)
	if aud := audienceOf(c["aud"]); !slices.Contains(aud, resource) || slices.Contains(aud, clientID) || c["azp"] != "mcp-client" {
		t.Fatalf("Keycloak's token: aud %v, azp %v; want %s among the audiences, not %s, and azp mcp-client", c["aud"], c["azp"], resource, clientID)
	}
	nearMiss := grant(t, p, realmName, "mcp-near-miss", "mcp-near-miss-e2e-secret", "alice", "alice-pw").AccessToken
	checkGatewayResourceToken(t, s, u, resource, tok, session, agent,
		gatewayRefusal{"a near miss of the resource (/mcpx/fs)", nearMiss, http.MethodPost, "/mcp/fs", http.StatusUnauthorized, "oidc_token_audience"})
}

// createClient makes a confidential client of realm, allowed the password
// grant, with the realm's default client scopes; its secret is
// <client>-e2e-secret. Its access tokens name each audience given too
// (Keycloak's oidc-audience-mapper with a custom audience, one each). It
// is removed when the test ends.
func createClient(t *testing.T, p *idp, realm, client string, audiences ...string) {
	t.Helper()
	kc, token := kcAdminAPI(t, p)
	rep := gocloak.Client{
		ClientID: gocloak.StringP(client), Secret: gocloak.StringP(client + "-e2e-secret"), Enabled: gocloak.BoolP(true),
		PublicClient: gocloak.BoolP(false), StandardFlowEnabled: gocloak.BoolP(false), DirectAccessGrantsEnabled: gocloak.BoolP(true),
	}
	var mappers []gocloak.ProtocolMapperRepresentation
	for i, audience := range audiences {
		if audience == "" {
			continue
		}
		mappers = append(mappers, gocloak.ProtocolMapperRepresentation{
			Name: gocloak.StringP(fmt.Sprintf("audience %d", i)), Protocol: gocloak.StringP("openid-connect"), ProtocolMapper: gocloak.StringP("oidc-audience-mapper"),
			Config: &map[string]string{"included.custom.audience": audience, "access.token.claim": "true", "id.token.claim": "false", "introspection.token.claim": "true"},
		})
	}
	if len(mappers) > 0 {
		rep.ProtocolMappers = &mappers
	}
	id, err := kc.CreateClient(context.Background(), token, realm, rep)
	if err != nil {
		t.Fatalf("create client %s in realm %s: %v", client, realm, err)
	}
	t.Cleanup(func() {
		kc, token := kcAdminAPI(t, p)
		if err := kc.DeleteClient(context.Background(), token, realm, id); err != nil {
			t.Errorf("delete client %s: %v", client, err)
		}
	})
}
