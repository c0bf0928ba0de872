// Package realm holds the Keycloak realm export used by agentauth's end-to-end
// tests and local development.
//
// realm-agents.json is a realm export that a real Keycloak 26 imports with
// `kc.sh start-dev --import-realm` (mount it under /opt/keycloak/data/import).
// It defines the realm "agents", the confidential client "agentauth" with the
// role mappers the service's role extraction relies on, a second client
// "other-app" whose client roles the service must ignore, and one test user
// per role-extraction case (password "<username>-pw").
//
// The same file configures the Keycloak stand-in in e2e/keycloak-standin,
// which the Go e2e suite runs where no Keycloak container is available.
// realm_test.go decodes the file strictly into gocloak's RealmRepresentation
// and checks the facts the service and the e2e suite depend on.
package realm
