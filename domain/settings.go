package domain

import "encoding/json"

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

// storedSettings is the JSON form stores keep, so that every store reads
// what another wrote.
type storedSettings struct {
	SecurityGateway    bool   `json:"security_gateway"`
	DefaultSessionMode string `json:"default_session_mode"`
}

// EncodeSettings is the stored form of s.
func EncodeSettings(s Settings) ([]byte, error) {
	return json.Marshal(storedSettings{SecurityGateway: s.SecurityGateway, DefaultSessionMode: string(s.DefaultSessionMode)})
}

// DecodeSettings reads EncodeSettings' form; a field absent from an older
// form keeps its default.
func DecodeSettings(b []byte) (Settings, error) {
	def := DefaultSettings()
	row := storedSettings{SecurityGateway: def.SecurityGateway, DefaultSessionMode: string(def.DefaultSessionMode)}
	if err := json.Unmarshal(b, &row); err != nil {
		return Settings{}, err
	}
	return Settings{SecurityGateway: row.SecurityGateway, DefaultSessionMode: SessionMode(row.DefaultSessionMode)}, nil
}
