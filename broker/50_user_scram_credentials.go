package broker

// DescribeUserScramCredentials v0 (key 50) and AlterUserScramCredentials
// v0 (key 51), KIP-554: SCRAM credentials kept per user in etcd
// (/config/users/<user>, as Kafka kept them in ZooKeeper) and read by the
// SCRAM mechanisms of every SASL listener. One result per user; a user is
// changed at most once per request (Kafka 4's ScramControlManager: a
// second change, of any mechanism, is DUPLICATE_RESOURCE for the user).

import (
	"context"
	"errors"
	"slices"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/controller"
	"github.com/samsa-io/samsa/security"
)

// scramMechanisms are the SCRAM mechanisms by their wire number.
var scramMechanisms = map[int8]string{1: security.ScramSHA256, 2: security.ScramSHA512}

func scramMechanismNumber(name string) int8 {
	for n, m := range scramMechanisms {
		if m == name {
			return n
		}
	}
	return 0
}

func (b *Broker) handleDescribeUserScramCredentials(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.DescribeUserSCRAMCredentialsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
	if err := b.clusterRefusal(r, security.OpDescribe); err != nil {
		// Kafka's error response: the error on top and on a result per
		// user asked for (without its name).
		resp.ErrorCode, resp.ErrorMessage = errCode(err), kmsg.StringPtr(kerr.ClusterAuthorizationFailed.Message)
		for range req.Users {
			res := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
			res.ErrorCode, res.ErrorMessage = resp.ErrorCode, resp.ErrorMessage
			resp.Results = append(resp.Results, res)
		}
		return resp, nil
	}
	all, err := b.store.EntityConfigs(ctx, controller.EntityUsers)
	if err != nil {
		resp.ErrorCode = errCode(err)
		return resp, nil
	}
	credentials := func(cfg map[string]string) []kmsg.DescribeUserSCRAMCredentialsResponseResultCredentialInfo {
		var out []kmsg.DescribeUserSCRAMCredentialsResponseResultCredentialInfo
		for _, m := range []string{security.ScramSHA256, security.ScramSHA512} {
			if v, ok := cfg[m]; ok {
				if c, err := security.ParseScramCredential(v); err == nil {
					ci := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
					ci.Mechanism, ci.Iterations = scramMechanismNumber(m), c.Iterations
					out = append(out, ci)
				}
			}
		}
		return out
	}
	result := func(user string, code int16, msg string) kmsg.DescribeUserSCRAMCredentialsResponseResult {
		res := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		res.User, res.ErrorCode = user, code
		if msg != "" {
			res.ErrorMessage = kmsg.StringPtr(msg)
		}
		return res
	}
	if req.Users == nil {
		var users []string
		for u, cfg := range all {
			if len(credentials(cfg)) > 0 {
				users = append(users, u)
			}
		}
		sort.Strings(users)
		for _, u := range users {
			res := result(u, 0, "")
			res.CredentialInfos = credentials(all[u])
			resp.Results = append(resp.Results, res)
		}
		return resp, nil
	}
	seen := map[string]int{}
	for _, u := range req.Users {
		seen[u.Name]++
	}
	done := map[string]bool{}
	for _, u := range req.Users {
		switch {
		case done[u.Name]:
			continue
		case seen[u.Name] > 1:
			resp.Results = append(resp.Results, result(u.Name, kerr.DuplicateResource.Code, "Cannot describe SCRAM credentials for the same user twice in a single request: "+u.Name))
		default:
			infos := credentials(all[u.Name])
			if len(infos) == 0 {
				resp.Results = append(resp.Results, result(u.Name, kerr.ResourceNotFound.Code, "Attempt to describe a user credential that does not exist: "+u.Name))
				break
			}
			res := result(u.Name, 0, "")
			res.CredentialInfos = infos
			resp.Results = append(resp.Results, res)
		}
		done[u.Name] = true
	}
	return resp, nil
}

// scramChange is one deletion or upsertion of a request.
type scramChange struct {
	mech   string
	delete bool
	cred   security.ScramCredential
}

func (b *Broker) handleAlterUserScramCredentials(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.AlterUserSCRAMCredentialsRequest)
	resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	var order []string
	changes := map[string][]scramChange{}
	failed := map[string]*kmsg.AlterUserSCRAMCredentialsResponseResult{}
	fail := func(user string, code int16, msg string) {
		if failed[user] != nil {
			return
		}
		res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		res.User, res.ErrorCode, res.ErrorMessage = user, code, kmsg.StringPtr(msg)
		failed[user] = &res
	}
	add := func(user string, mech int8, c scramChange) {
		if !slices.Contains(order, user) {
			order = append(order, user)
		}
		name, ok := scramMechanisms[mech]
		switch {
		case user == "":
			fail(user, kerr.UnacceptableCredential.Code, "Username must not be empty")
			return
		case !ok:
			fail(user, kerr.UnsupportedSaslMechanism.Code, "Unknown SCRAM mechanism")
			return
		}
		if len(changes[user]) > 0 { // any two changes of a user, as Kafka 4's controller refuses them
			fail(user, kerr.DuplicateResource.Code, "A user credential cannot be altered twice in the same request")
			return
		}
		c.mech = name
		changes[user] = append(changes[user], c)
	}
	for _, d := range req.Deletions {
		add(d.Name, d.Mechanism, scramChange{delete: true})
	}
	for _, u := range req.Upsertions {
		var c scramChange
		switch {
		case u.Iterations < security.ScramMinIterations:
			fail(u.Name, kerr.UnacceptableCredential.Code, "Too few iterations")
		case u.Iterations > security.ScramMaxIterations:
			fail(u.Name, kerr.UnacceptableCredential.Code, "Too many iterations")
		default:
			var err error
			if c.cred, err = security.NewScramCredential(scramMechanisms[u.Mechanism], u.Salt, u.SaltedPassword, u.Iterations); err != nil && !errors.Is(err, security.ErrUnknownMechanism) {
				fail(u.Name, kerr.UnacceptableCredential.Code, err.Error())
			}
		}
		add(u.Name, u.Mechanism, c)
	}
	refusal := b.clusterRefusal(r, security.OpAlter)
	for _, user := range order {
		if refusal != nil {
			fail(user, kerr.ClusterAuthorizationFailed.Code, "")
		}
		if res := failed[user]; res != nil {
			resp.Results = append(resp.Results, *res)
			continue
		}
		res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		res.User = user
		errNotFound := errors.New("no such credential")
		err := b.store.UpdateEntityConfig(ctx, controller.EntityUsers, user, func(cfg map[string]string) (map[string]string, error) {
			for _, c := range changes[user] {
				if c.delete {
					if _, ok := cfg[c.mech]; !ok {
						return nil, errNotFound
					}
					delete(cfg, c.mech)
					continue
				}
				cfg[c.mech] = c.cred.String()
			}
			return cfg, nil
		})
		switch {
		case errors.Is(err, errNotFound):
			res.ErrorCode, res.ErrorMessage = kerr.ResourceNotFound.Code, kmsg.StringPtr("Attempt to delete a user credential that does not exist")
		case err != nil:
			res.ErrorCode, res.ErrorMessage = errCode(err), kmsg.StringPtr(err.Error())
		}
		resp.Results = append(resp.Results, res)
	}
	return resp, nil
}
