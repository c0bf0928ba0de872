// Package peers holds the real, independent OpenID providers the e2e
// suite runs agentauth against, in a module of their own so that their
// dependencies stay out of agentauth's go.mod. The e2e suite builds each
// command once per version into the user cache folder.
package peers
