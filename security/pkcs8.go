package security

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/pbkdf2"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509/pkix"
	"encoding/asn1"
	"errors"
	"fmt"
	"hash"
)

// An encrypted PKCS#8 key (RFC 5958 EncryptedPrivateKeyInfo) as openssl
// and Kafka's PEM keystores write it: PBES2 (RFC 8018) with PBKDF2 and
// AES-CBC. The older PBES1 schemes are refused.

var (
	oidPBES2      = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 13}
	oidPBKDF2     = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 12}
	oidHMACSHA1   = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 7}
	oidHMACSHA256 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 9}
	oidHMACSHA512 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 11}
	aesCBCKeyLen  = map[string]int{"2.16.840.1.101.3.4.1.2": 16, "2.16.840.1.101.3.4.1.22": 24, "2.16.840.1.101.3.4.1.42": 32}
)

type encryptedPKCS8 struct {
	Algo pkix.AlgorithmIdentifier
	Data []byte
}

type pbes2Params struct {
	KDF    pkix.AlgorithmIdentifier
	Scheme pkix.AlgorithmIdentifier
}

type pbkdf2Params struct {
	Salt       []byte
	Iterations int
	KeyLength  int                      `asn1:"optional"`
	PRF        pkix.AlgorithmIdentifier `asn1:"optional"`
}

// maxPBKDF2Iterations bounds the work a key file can ask for.
const maxPBKDF2Iterations = 10_000_000

func decryptPKCS8(der, password []byte) ([]byte, error) {
	var e encryptedPKCS8
	if _, err := asn1.Unmarshal(der, &e); err != nil {
		return nil, fmt.Errorf("encrypted PKCS#8: %w", err)
	}
	if !e.Algo.Algorithm.Equal(oidPBES2) {
		return nil, fmt.Errorf("encrypted PKCS#8: scheme %v is not PBES2", e.Algo.Algorithm)
	}
	var p pbes2Params
	if _, err := asn1.Unmarshal(e.Algo.Parameters.FullBytes, &p); err != nil {
		return nil, fmt.Errorf("PBES2 parameters: %w", err)
	}
	if !p.KDF.Algorithm.Equal(oidPBKDF2) {
		return nil, fmt.Errorf("PBES2: key derivation %v is not PBKDF2", p.KDF.Algorithm)
	}
	var kp pbkdf2Params
	if _, err := asn1.Unmarshal(p.KDF.Parameters.FullBytes, &kp); err != nil {
		return nil, fmt.Errorf("PBKDF2 parameters: %w", err)
	}
	if kp.Iterations < 1 || kp.Iterations > maxPBKDF2Iterations {
		return nil, fmt.Errorf("PBKDF2: %d iterations", kp.Iterations)
	}
	var h func() hash.Hash
	switch prf := kp.PRF.Algorithm; {
	case len(prf) == 0 || prf.Equal(oidHMACSHA1):
		h = sha1.New
	case prf.Equal(oidHMACSHA256):
		h = sha256.New
	case prf.Equal(oidHMACSHA512):
		h = sha512.New
	default:
		return nil, fmt.Errorf("PBKDF2: PRF %v not supported", prf)
	}
	keyLen, ok := aesCBCKeyLen[p.Scheme.Algorithm.String()]
	if !ok {
		return nil, fmt.Errorf("PBES2: cipher %v not supported (AES-CBC only)", p.Scheme.Algorithm)
	}
	var iv []byte
	if _, err := asn1.Unmarshal(p.Scheme.Parameters.FullBytes, &iv); err != nil || len(iv) != aes.BlockSize {
		return nil, errors.New("PBES2: bad AES-CBC IV")
	}
	key, err := pbkdf2.Key(h, string(password), kp.Salt, kp.Iterations, keyLen)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	if len(e.Data) == 0 || len(e.Data)%aes.BlockSize != 0 {
		return nil, errors.New("encrypted PKCS#8: data is not whole blocks")
	}
	out := make([]byte, len(e.Data))
	cipher.NewCBCDecrypter(block, iv).CryptBlocks(out, e.Data)
	pad := int(out[len(out)-1])
	if pad < 1 || pad > aes.BlockSize {
		return nil, errors.New("encrypted PKCS#8: wrong password (bad padding)")
	}
	for _, b := range out[len(out)-pad:] {
		if int(b) != pad {
			return nil, errors.New("encrypted PKCS#8: wrong password (bad padding)")
		}
	}
	return out[:len(out)-pad], nil
}
