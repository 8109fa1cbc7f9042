package security

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"sort"
	"strconv"
	"strings"
	"unicode/utf16"
)

// PasswordEncoder encrypts the secrets of dynamic configs (passwords,
// private keys, sasl.jaas.config) before they are stored in etcd, as
// Kafka encrypted them before ZooKeeper with password.encoder.secret:
// AES under a key derived from the secret with PBKDF2 and a random salt
// of 256 bytes. The stored form is Kafka's, comma-separated key:value
// pairs (encryptedPassword, passwordLength, salt, keyLength,
// keyFactoryAlgorithm, cipherAlgorithm, iterations, initializationVector
// and, with GCM, authenticationTagLength), so a value reads back with
// the parameters it was written with.
type PasswordEncoder struct {
	secret     string
	oldSecret  string // decodes what the previous secret encoded
	keyFactory string // PBKDF2WithHmacSHA512, ...SHA256, ...SHA1
	cipherAlg  string // AES/CBC/PKCS5Padding or AES/GCM/NoPadding
	keyLength  int    // bits
	iterations int
}

// Kafka's names of the stored form's fields.
const (
	pwEncrypted  = "encryptedPassword"
	pwLength     = "passwordLength"
	pwSalt       = "salt"
	pwKeyLength  = "keyLength"
	pwKeyFactory = "keyFactoryAlgorithm"
	pwCipher     = "cipherAlgorithm"
	pwIterations = "iterations"
	pwIV         = "initializationVector"
	pwTagLength  = "authenticationTagLength"
)

// maxPasswordIterations bounds the PBKDF2 work a stored value can ask for.
const maxPasswordIterations = 1 << 22

// ErrPasswordDecode is a stored secret that does not decode: another
// secret encoded it, or it was altered.
var ErrPasswordDecode = errors.New("security: the password could not be decoded")

// NewPasswordEncoder returns an encoder with password.encoder.secret (and
// password.encoder.old.secret, for decoding only) and the other
// password.encoder.* settings; keyFactory "" is PBKDF2WithHmacSHA512.
func NewPasswordEncoder(secret, oldSecret, keyFactory, cipherAlg string, keyLength, iterations int) (*PasswordEncoder, error) {
	if secret == "" {
		return nil, errors.New("security: password.encoder.secret is empty")
	}
	if keyFactory == "" {
		keyFactory = "PBKDF2WithHmacSHA512"
	}
	e := &PasswordEncoder{secret: secret, oldSecret: oldSecret, keyFactory: keyFactory, cipherAlg: cipherAlg, keyLength: keyLength, iterations: iterations}
	if _, err := pbkdf2Hash(keyFactory); err != nil {
		return nil, err
	}
	if cipherAlg != "AES/CBC/PKCS5Padding" && cipherAlg != "AES/GCM/NoPadding" {
		return nil, fmt.Errorf("security: password.encoder.cipher.algorithm %q is not supported (AES/CBC/PKCS5Padding, AES/GCM/NoPadding)", cipherAlg)
	}
	if keyLength != 128 && keyLength != 192 && keyLength != 256 {
		return nil, fmt.Errorf("security: password.encoder.key.length %d is not an AES key length (128, 192, 256)", keyLength)
	}
	if iterations < 1 || iterations > maxPasswordIterations {
		return nil, fmt.Errorf("security: password.encoder.iterations %d out of range", iterations)
	}
	return e, nil
}

func pbkdf2Hash(name string) (func() hash.Hash, error) {
	switch name {
	case "PBKDF2WithHmacSHA512":
		return sha512.New, nil
	case "PBKDF2WithHmacSHA256":
		return sha256.New, nil
	case "PBKDF2WithHmacSHA1":
		return sha1.New, nil
	}
	return nil, fmt.Errorf("security: key factory algorithm %q is not supported", name)
}

// IsEncodedPassword reports whether s has the stored form of an encrypted
// secret (a value stored before secrets were encrypted has not).
func IsEncodedPassword(s string) bool {
	_, ok := parsePasswordFields(s)[pwEncrypted]
	return ok
}

// Encode encrypts password with a fresh salt and IV.
func (e *PasswordEncoder) Encode(password string) (string, error) {
	salt := make([]byte, 256)
	if _, err := rand.Read(salt); err != nil {
		return "", err
	}
	aead, iv, err := passwordCipherOf(e.secret, e.keyFactory, e.cipherAlg, salt, e.keyLength, e.iterations, nil, 0)
	if err != nil {
		return "", err
	}
	fields := map[string]string{
		pwKeyFactory: e.keyFactory,
		pwCipher:     e.cipherAlg,
		pwKeyLength:  strconv.Itoa(e.keyLength),
		pwSalt:       base64.StdEncoding.EncodeToString(salt),
		pwIterations: strconv.Itoa(e.iterations),
		pwEncrypted:  base64.StdEncoding.EncodeToString(aead.seal([]byte(password))),
		pwLength:     strconv.Itoa(len(utf16.Encode([]rune(password)))), // Java's String.length
		pwIV:         base64.StdEncoding.EncodeToString(iv),
	}
	if e.cipherAlg == "AES/GCM/NoPadding" {
		fields[pwTagLength] = "128"
	}
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var sb strings.Builder
	for i, k := range keys {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(k + ":" + fields[k])
	}
	return sb.String(), nil
}

// Decode decrypts a stored secret with the parameters it names, under
// the secret or else the old secret.
func (e *PasswordEncoder) Decode(encoded string) (string, error) {
	f := parsePasswordFields(encoded)
	num := func(k string, lo, hi int) (int, error) {
		n, err := strconv.Atoi(f[k])
		if err != nil || n < lo || n > hi {
			return 0, fmt.Errorf("%w: %s %q", ErrPasswordDecode, k, f[k])
		}
		return n, nil
	}
	keyLength, err := num(pwKeyLength, 128, 256)
	if err != nil {
		return "", err
	}
	iterations, err := num(pwIterations, 1, maxPasswordIterations)
	if err != nil {
		return "", err
	}
	length, err := num(pwLength, 0, len(encoded))
	if err != nil {
		return "", err
	}
	tagLength := 0
	if f[pwCipher] == "AES/GCM/NoPadding" {
		if tagLength, err = num(pwTagLength, 128, 128); err != nil {
			return "", err
		}
	}
	var raw [3][]byte
	for i, k := range []string{pwSalt, pwEncrypted, pwIV} {
		if raw[i], err = base64.StdEncoding.DecodeString(f[k]); err != nil {
			return "", fmt.Errorf("%w: %s: %v", ErrPasswordDecode, k, err)
		}
	}
	salt, ciphertext, iv := raw[0], raw[1], raw[2]
	keyFactory := f[pwKeyFactory]
	if keyFactory == "" {
		keyFactory = "PBKDF2WithHmacSHA512"
	}
	for _, secret := range []string{e.secret, e.oldSecret} {
		if secret == "" {
			continue
		}
		aead, _, err := passwordCipherOf(secret, keyFactory, f[pwCipher], salt, keyLength, iterations, iv, tagLength)
		if err != nil {
			return "", fmt.Errorf("%w: %v", ErrPasswordDecode, err)
		}
		plain, err := aead.open(ciphertext)
		if err == nil && len(utf16.Encode([]rune(string(plain)))) == length {
			return string(plain), nil
		}
	}
	return "", ErrPasswordDecode
}

// passwordCipher seals and opens with one key and IV.
type passwordCipher struct {
	seal func(plain []byte) []byte
	open func(ciphertext []byte) ([]byte, error)
}

// passwordCipherOf derives the key of secret and salt and returns the
// cipher of cipherAlg with iv (a fresh one when nil) and the IV it uses.
func passwordCipherOf(secret, keyFactory, cipherAlg string, salt []byte, keyLength, iterations int, iv []byte, tagLength int) (passwordCipher, []byte, error) {
	h, err := pbkdf2Hash(keyFactory)
	if err != nil {
		return passwordCipher{}, nil, err
	}
	key, err := pbkdf2.Key(h, secret, salt, iterations, keyLength/8)
	if err != nil {
		return passwordCipher{}, nil, err
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return passwordCipher{}, nil, err
	}
	switch cipherAlg {
	case "AES/GCM/NoPadding":
		gcm, err := cipher.NewGCM(block)
		if err != nil {
			return passwordCipher{}, nil, err
		}
		if iv == nil {
			iv = make([]byte, gcm.NonceSize())
			if _, err := rand.Read(iv); err != nil {
				return passwordCipher{}, nil, err
			}
		} else if len(iv) != gcm.NonceSize() {
			if gcm, err = cipher.NewGCMWithNonceSize(block, len(iv)); err != nil || len(iv) == 0 {
				return passwordCipher{}, nil, fmt.Errorf("GCM IV of %d bytes", len(iv))
			}
		}
		return passwordCipher{
			seal: func(p []byte) []byte { return gcm.Seal(nil, iv, p, nil) },
			open: func(c []byte) ([]byte, error) { return gcm.Open(nil, iv, c, nil) },
		}, iv, nil
	case "AES/CBC/PKCS5Padding":
		if iv == nil {
			iv = make([]byte, aes.BlockSize)
			if _, err := rand.Read(iv); err != nil {
				return passwordCipher{}, nil, err
			}
		} else if len(iv) != aes.BlockSize {
			return passwordCipher{}, nil, fmt.Errorf("CBC IV of %d bytes", len(iv))
		}
		return passwordCipher{
			seal: func(p []byte) []byte {
				pad := aes.BlockSize - len(p)%aes.BlockSize
				buf := append(append([]byte(nil), p...), make([]byte, pad)...)
				for i := len(p); i < len(buf); i++ {
					buf[i] = byte(pad)
				}
				cipher.NewCBCEncrypter(block, iv).CryptBlocks(buf, buf)
				return buf
			},
			open: func(c []byte) ([]byte, error) {
				if len(c) == 0 || len(c)%aes.BlockSize != 0 {
					return nil, ErrPasswordDecode
				}
				buf := append([]byte(nil), c...)
				cipher.NewCBCDecrypter(block, iv).CryptBlocks(buf, buf)
				pad := int(buf[len(buf)-1])
				if pad < 1 || pad > aes.BlockSize {
					return nil, ErrPasswordDecode
				}
				for _, b := range buf[len(buf)-pad:] {
					if int(b) != pad {
						return nil, ErrPasswordDecode
					}
				}
				return buf[:len(buf)-pad], nil
			},
		}, iv, nil
	}
	return passwordCipher{}, nil, fmt.Errorf("cipher algorithm %q is not supported", cipherAlg)
}

// parsePasswordFields splits Kafka's key:value,key:value form.
func parsePasswordFields(s string) map[string]string {
	f := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		if k, v, ok := strings.Cut(kv, ":"); ok {
			f[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return f
}
