// Package testcert makes certificates for tests at run time: a CA and
// leaf certificates it signs for 127.0.0.1 and localhost, written as PEM
// files, so TLS tests do real handshakes without keys in the repository.
//
// It imports only the standard library.
package testcert

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// CA is a certificate authority for one test.
type CA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	// CertFile is the CA certificate as a PEM file, for clients to trust.
	CertFile string
	// Pool holds the CA certificate.
	Pool *x509.CertPool
	dir  string
	n    int64
}

// NewCA makes a CA writing its files under dir.
func NewCA(dir string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("ca key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "llmgw test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("ca certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("ca certificate: %w", err)
	}
	ca := &CA{cert: cert, key: key, CertFile: filepath.Join(dir, "ca.pem"), Pool: x509.NewCertPool(), dir: dir, n: 1}
	ca.Pool.AddCert(cert)
	if err := writePEM(ca.CertFile, "CERTIFICATE", der); err != nil {
		return nil, err
	}
	return ca, nil
}

// Leaf is a signed server certificate and its key, as PEM files.
type Leaf struct {
	CertFile, KeyFile string
	// Serial tells one leaf from the next (a reload test checks which one
	// a handshake presents).
	Serial *big.Int
}

// Issue signs a server certificate for 127.0.0.1, ::1 and localhost and
// writes it and its key to name.pem and name-key.pem, replacing what is
// there.
func (ca *CA) Issue(name string) (Leaf, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Leaf{}, fmt.Errorf("leaf key: %w", err)
	}
	ca.n++
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(ca.n), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}, DNSNames: []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return Leaf{}, fmt.Errorf("leaf certificate: %w", err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return Leaf{}, fmt.Errorf("leaf key: %w", err)
	}
	l := Leaf{CertFile: filepath.Join(ca.dir, name+".pem"), KeyFile: filepath.Join(ca.dir, name+"-key.pem"), Serial: tmpl.SerialNumber}
	// The key first: a reader seeing the new certificate finds its key.
	if err := writePEM(l.KeyFile, "EC PRIVATE KEY", kder); err != nil {
		return Leaf{}, err
	}
	if err := writePEM(l.CertFile, "CERTIFICATE", der); err != nil {
		return Leaf{}, err
	}
	return l, nil
}

// writePEM writes one PEM block to path through a rename, so a reader
// never sees half a file.
func writePEM(path, typ string, der []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
