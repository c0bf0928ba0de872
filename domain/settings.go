package domain

// Settings are the service-wide switches an ADMIN changes at run time.
type Settings struct {
	// SecurityGateway, when on, denies every tool that belongs to no
	// registered server.
	SecurityGateway bool
	// DefaultSessionMode is the mode of a session created without one.
	DefaultSessionMode SessionMode
}

// DefaultSettings are in force until an ADMIN changes them.
func DefaultSettings() Settings {
	return Settings{SecurityGateway: false, DefaultSessionMode: ModeAsk}
}

// Validate checks every field.
func (s Settings) Validate() error {
	_, err := ParseSessionMode(string(s.DefaultSessionMode))
	return err
}
