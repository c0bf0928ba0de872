package config

// OIDC is the OpenID Connect client (auth.oidc.*).
type OIDC struct {
	Enabled          bool   `yaml:"enabled" env:"SERVICE_OIDC_ENABLED"`
	Issuer           string `yaml:"issuer" env:"SERVICE_OIDC_ISSUER"`
	ClientID         string `yaml:"clientId" env:"SERVICE_OIDC_CLIENT_ID"`
	ClientSecret     string `yaml:"clientSecret" env:"SERVICE_OIDC_CLIENT_SECRET"`
	ClientSecretFile string `yaml:"clientSecretFile" env:"SERVICE_OIDC_CLIENT_SECRET_FILE"`
	RedirectURI      string `yaml:"redirectUri" env:"SERVICE_OIDC_REDIRECT_URI"`
}
