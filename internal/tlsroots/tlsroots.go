// Package tlsroots builds the certificate pool for calls to an identity
// provider or a central agentauth that sits behind an internal certificate
// authority: the system roots plus the PEM bundles the operator names.
package tlsroots

import (
	"crypto/x509"
	"fmt"
	"os"

	"github.com/agentauth/agentauth/domain"
)

// SystemPlus returns the system roots plus every certificate in files.
// setting names the configuration that lists the files, so that an error
// says what to fix. Verification is never turned off: a missing or empty
// bundle is an error.
func SystemPlus(setting string, files ...string) (*x509.CertPool, error) {
	roots, err := x509.SystemCertPool()
	if err != nil || roots == nil {
		roots = x509.NewCertPool()
	}
	for _, f := range files {
		pem, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("CA bundle (%s): %w", setting, err)
		}
		if !roots.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("CA bundle %s (%s) holds no PEM certificate: %w", f, setting, domain.ErrInvalidInput)
		}
	}
	return roots, nil
}
