// Package realm holds the Keycloak realm export used by agentauth's end-to-end
// tests and local development.
//
// realm-agents.json is a realm export that Keycloak 26 imports with
// `kc.sh start-dev --import-realm` (from data/import under Keycloak's home,
// /opt/keycloak/data/import in the image).
// It defines the realm "agents", the confidential client "agentauth" with the
// role mappers the service's role extraction relies on, a second client
// "other-app" whose client roles the service must ignore, and one test user
// per role-extraction case (password "<username>-pw").
//
// The e2e suite imports it into a real Keycloak 26.7.3 (internal/keycloakserver),
// only its agentauth URLs moved to the test's port; the same file configures
// the Keycloak stand-in in e2e/keycloak-standin.
// realm_test.go decodes the file strictly into gocloak's RealmRepresentation
// and checks the facts the service and the e2e suite depend on.
package realm
