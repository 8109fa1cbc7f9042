package controller

import (
	"context"
	"encoding/json"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Delegation tokens as Kafka kept them in ZooKeeper, one key per token:
//
//	/delegation_token/tokens/<token id>
//	    {"version":3,"tokenId":"<id>","owner":"User:alice","tokenRequester":"User:alice",
//	     "renewers":["User:bob"],"issueTimestamp":<ms>,"maxTimestamp":<ms>,"expiryTimestamp":<ms>}
//
// The HMAC (the token's password) is not stored: every broker derives it
// from the id with its delegation.token.secret.key, as Kafka's brokers do.

// DelegationToken is what is kept of a token. Principals are Kafka's
// "Type:name" strings; timestamps are Unix milliseconds.
type DelegationToken struct {
	TokenID         string   `json:"tokenId"`
	Owner           string   `json:"owner"`
	TokenRequester  string   `json:"tokenRequester"`
	Renewers        []string `json:"renewers"`
	IssueTimestamp  int64    `json:"issueTimestamp"`
	MaxTimestamp    int64    `json:"maxTimestamp"`
	ExpiryTimestamp int64    `json:"expiryTimestamp"`
}

// Expired reports whether the token is past its expiry or its maximum
// lifetime at now (Unix ms), as Kafka's expiry sweep decides.
func (t DelegationToken) Expired(now int64) bool {
	return t.MaxTimestamp < now || t.ExpiryTimestamp < now
}

type tokenValue struct {
	Version int `json:"version"`
	DelegationToken
}

func (s *Store) tokensPrefix() string      { return s.root + "/delegation_token/tokens/" }
func (s *Store) tokenKey(id string) string { return s.tokensPrefix() + id }

func decodeToken(b []byte) (DelegationToken, error) {
	var v tokenValue
	err := json.Unmarshal(b, &v)
	return v.DelegationToken, err
}

func encodeToken(t DelegationToken) (string, error) {
	b, err := json.Marshal(tokenValue{Version: 3, DelegationToken: t})
	return string(b), err
}

// CreateDelegationToken stores a new token; ErrStale if its id is taken.
func (s *Store) CreateDelegationToken(ctx context.Context, t DelegationToken) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	if t.TokenID == "" {
		return fmt.Errorf("%w: empty token id", ErrInvalid)
	}
	v, err := encodeToken(t)
	if err != nil {
		return err
	}
	key := s.tokenKey(t.TokenID)
	tr, err := s.cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).Then(clientv3.OpPut(key, v)).Commit()
	if err != nil {
		return fmt.Errorf("controller: writing delegation token: %w", err)
	}
	if !tr.Succeeded {
		return fmt.Errorf("%w: delegation token %s exists", ErrStale, t.TokenID)
	}
	return nil
}

// DelegationToken reads one token; found is false when there is none.
func (s *Store) DelegationToken(ctx context.Context, id string) (t DelegationToken, found bool, err error) {
	if err := s.checkOpen(); err != nil {
		return t, false, err
	}
	resp, err := s.cli.Get(ctx, s.tokenKey(id))
	if err != nil {
		return t, false, fmt.Errorf("controller: reading delegation token: %w", err)
	}
	if len(resp.Kvs) == 0 {
		return t, false, nil
	}
	t, err = decodeToken(resp.Kvs[0].Value)
	if err != nil {
		return t, false, fmt.Errorf("controller: delegation token %s: %w", id, err)
	}
	return t, true, nil
}

// DelegationTokens reads every token.
func (s *Store) DelegationTokens(ctx context.Context) ([]DelegationToken, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	resp, err := s.cli.Get(ctx, s.tokensPrefix(), clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("controller: reading delegation tokens: %w", err)
	}
	out := make([]DelegationToken, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		t, err := decodeToken(kv.Value)
		if err != nil {
			return nil, fmt.Errorf("controller: delegation token %s: %w", kv.Key, err)
		}
		out = append(out, t)
	}
	return out, nil
}

// UpdateDelegationToken changes token id with update, in a transaction
// conditioned on the revision read (retried on a lost race). update gets
// nil when the token does not exist; it returns the token to store, nil
// to delete it, or an error, which leaves the token as it was and is
// returned.
func (s *Store) UpdateDelegationToken(ctx context.Context, id string, update func(*DelegationToken) (*DelegationToken, error)) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	key := s.tokenKey(id)
	for {
		resp, err := s.cli.Get(ctx, key)
		if err != nil {
			return fmt.Errorf("controller: reading delegation token: %w", err)
		}
		var cur *DelegationToken
		var rev int64
		if len(resp.Kvs) > 0 {
			t, err := decodeToken(resp.Kvs[0].Value)
			if err != nil {
				return fmt.Errorf("controller: delegation token %s: %w", id, err)
			}
			cur, rev = &t, resp.Kvs[0].ModRevision
		}
		next, err := update(cur)
		if err != nil {
			return err
		}
		op := clientv3.OpDelete(key)
		if next != nil {
			v, err := encodeToken(*next)
			if err != nil {
				return err
			}
			op = clientv3.OpPut(key, v)
		}
		tr, err := s.cli.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", rev)).Then(op).Commit()
		if err != nil {
			return fmt.Errorf("controller: writing delegation token: %w", err)
		}
		if tr.Succeeded {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// RemoveExpiredDelegationTokens deletes the tokens expired at now (Unix
// ms), each conditioned on the revision it was read at (a token renewed
// meanwhile stays), and returns those it deleted.
func (s *Store) RemoveExpiredDelegationTokens(ctx context.Context, now int64) ([]DelegationToken, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	resp, err := s.cli.Get(ctx, s.tokensPrefix(), clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("controller: reading delegation tokens: %w", err)
	}
	var removed []DelegationToken
	for _, kv := range resp.Kvs {
		t, err := decodeToken(kv.Value)
		if err != nil || !t.Expired(now) {
			continue
		}
		key := string(kv.Key)
		tr, err := s.cli.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", kv.ModRevision)).Then(clientv3.OpDelete(key)).Commit()
		if err != nil {
			return removed, fmt.Errorf("controller: removing delegation token: %w", err)
		}
		if tr.Succeeded {
			removed = append(removed, t)
		}
	}
	return removed, nil
}
