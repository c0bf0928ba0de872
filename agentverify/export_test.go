package agentverify

// NewRemoteKeysAt is NewRemoteKeys on a clock the test moves.
var NewRemoteKeysAt = newRemoteKeys
