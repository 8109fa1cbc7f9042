package groups

// ConsumerGroupDescribe, and what the classic admin APIs show of a
// consumer group (KIP-1043: ListGroups names its type; DescribeGroups
// answers that it is not a classic group, as Kafka 4 does).

import (
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ConsumerGroupDescribe serves ConsumerGroupDescribe v0-v1. A group that
// does not exist, or is classic, is GROUP_ID_NOT_FOUND (the Java Admin
// then describes it with DescribeGroups).
func (c *Coordinator) ConsumerGroupDescribe(req *kmsg.ConsumerGroupDescribeRequest) *kmsg.ConsumerGroupDescribeResponse {
	resp := req.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
	for _, id := range req.Groups {
		resp.Groups = append(resp.Groups, c.describeConsumer(id, req.IncludeAuthorizedOperations))
	}
	return resp
}

// groupAuthorizedOps: READ, DESCRIBE, DELETE, DESCRIBE_CONFIGS and
// ALTER_CONFIGS, the operations Kafka 4.x applies to a group, all allowed
// without an authorizer (with one, the broker sets a principal's own).
var groupAuthorizedOps = int32(1<<kmsg.ACLOperationRead | 1<<kmsg.ACLOperationDescribe | 1<<kmsg.ACLOperationDelete |
	1<<kmsg.ACLOperationDescribeConfigs | 1<<kmsg.ACLOperationAlterConfigs)

func (c *Coordinator) describeConsumer(id string, ops bool) kmsg.ConsumerGroupDescribeResponseGroup {
	d := kmsg.NewConsumerGroupDescribeResponseGroup()
	d.Group = id
	cg, unlock, err := describedGroup[*consumerGroup](c, id, "consumer")
	if err != nil {
		d.ErrorCode, d.ErrorMessage = describeError(err)
		return d
	}
	defer unlock()
	d.State, d.Epoch, d.AssignmentEpoch, d.AssignorName = cg.stateName(), cg.epoch, cg.assignmentEpoch, cg.assignorName
	if d.AssignorName == "" {
		d.AssignorName = c.chooseAssignor(cg)
	}
	if ops {
		d.AuthorizedOperations = groupAuthorizedOps
	}
	names := map[string][16]byte{}
	for _, t := range c.cfg.Topics() {
		names[t.Name] = t.ID
	}
	toAssignment := func(tps []topicPartition) kmsg.Assignment {
		a := kmsg.NewAssignment()
		for _, tp := range tps {
			n := len(a.TopicPartitions)
			if n == 0 || a.TopicPartitions[n-1].Topic != tp.topic {
				at := kmsg.NewAssignmentTopicPartition()
				at.Topic, at.TopicID = tp.topic, names[tp.topic]
				a.TopicPartitions = append(a.TopicPartitions, at)
				n++
			}
			a.TopicPartitions[n-1].Partitions = append(a.TopicPartitions[n-1].Partitions, tp.partition)
		}
		return a
	}
	for _, mid := range slices.Sorted(maps.Keys(cg.members)) {
		m := cg.members[mid]
		dm := kmsg.NewConsumerGroupDescribeResponseGroupMember()
		dm.MemberID, dm.MemberEpoch, dm.ClientID, dm.ClientHost = m.id, m.epoch, m.clientID, m.clientHost
		if m.instanceID != "" {
			dm.InstanceID = kmsg.StringPtr(m.instanceID)
		}
		if m.rack != "" {
			dm.RackID = kmsg.StringPtr(m.rack)
		}
		dm.SubscribedTopics = slices.Clone(m.topics)
		if dm.SubscribedTopics == nil {
			dm.SubscribedTopics = []string{}
		}
		if m.regex != "" {
			dm.SubscribedTopicRegex = kmsg.StringPtr(m.regex)
		}
		dm.Assignment = toAssignment(m.assigned.sorted())
		dm.TargetAssignment = toAssignment(cg.target[m.id])
		dm.MemberType = 1 // consumer protocol (0: classic, -1: unknown)
		d.Members = append(d.Members, dm)
	}
	return d
}
