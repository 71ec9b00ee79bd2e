package listener

import (
	"crypto/tls"
	"fmt"
	"os"
	"sync"
	"time"
)

// TLSConfig returns a server config whose certificate is read from
// certFile and keyFile now, and again at the next handshake after either
// file's modification time or size changes, so a renewed certificate
// (written by Nomad's template, certbot, Vault agent) is served without a
// restart. A renewed pair that does not load is reported to onError and
// the previous one kept.
func TLSConfig(certFile, keyFile string, onError func(error)) (*tls.Config, error) {
	r := &certReloader{certFile: certFile, keyFile: keyFile, onError: onError}
	if err := r.reload(); err != nil {
		return nil, err
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: r.get}, nil
}

type certReloader struct {
	certFile, keyFile string
	onError           func(error)

	mu      sync.Mutex
	cert    *tls.Certificate
	version [2]fileVersion
	lastErr string // reported once, not at every handshake
}

type fileVersion struct {
	mod  time.Time
	size int64
}

func stat(path string) (fileVersion, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileVersion{}, err
	}
	return fileVersion{fi.ModTime(), fi.Size()}, nil
}

func (r *certReloader) versions() ([2]fileVersion, error) {
	c, err := stat(r.certFile)
	if err != nil {
		return [2]fileVersion{}, fmt.Errorf("tls certificate: %w", err)
	}
	k, err := stat(r.keyFile)
	if err != nil {
		return [2]fileVersion{}, fmt.Errorf("tls key: %w", err)
	}
	return [2]fileVersion{c, k}, nil
}

// reload loads the pair when its files changed since the last load.
func (r *certReloader) reload() error {
	v, err := r.versions()
	if err != nil {
		return err
	}
	if r.cert != nil && v == r.version {
		return nil
	}
	cert, err := tls.LoadX509KeyPair(r.certFile, r.keyFile)
	if err != nil {
		return fmt.Errorf("tls certificate %s and key %s: %w", r.certFile, r.keyFile, err)
	}
	r.cert, r.version = &cert, v
	return nil
}

func (r *certReloader) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	err := r.reload()
	switch {
	case err == nil:
		r.lastErr = ""
	case err.Error() != r.lastErr:
		r.lastErr = err.Error()
		if r.onError != nil {
			r.onError(err)
		}
	}
	return r.cert, nil
}
