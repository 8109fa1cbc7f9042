package groups

import (
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The topology description statuses of StreamsGroupDescribe v1 samsa
// answers: it stores no description (KIP-1331), as Kafka 4.4 at
// streams.version 1 does not.
const (
	topologyDescriptionNotRequested = 0
	topologyDescriptionNotStored    = 1
)

// StreamsGroupDescribe serves StreamsGroupDescribe v0-v1.
func (c *Coordinator) StreamsGroupDescribe(req *kmsg.StreamsGroupDescribeRequest) *kmsg.StreamsGroupDescribeResponse {
	resp := req.ResponseKind().(*kmsg.StreamsGroupDescribeResponse)
	for _, id := range req.Groups {
		resp.Groups = append(resp.Groups, c.describeStreams(id, req.IncludeAuthorizedOperations, req.IncludeTopologyDescription))
	}
	return resp
}

func (c *Coordinator) describeStreams(id string, ops, withDescription bool) kmsg.StreamsGroupDescribeResponseGroup {
	d := kmsg.NewStreamsGroupDescribeResponseGroup()
	d.Group = id
	sg, unlock, err := describedGroup[*streamsGroup](c, id, "streams")
	if err != nil {
		d.ErrorCode, d.ErrorMessage = describeError(err)
		return d
	}
	defer unlock()
	d.State, d.Epoch, d.AssignmentEpoch = sg.stateName(), sg.epoch, sg.assignmentEpoch
	d.AssignorName = kmsg.StringPtr("sticky")
	if ops {
		d.AuthorizedOperations = groupAuthorizedOps
	}
	if t := sg.topology; t != nil {
		dt := kmsg.NewStreamsGroupDescribeResponseGroupTopology()
		dt.Epoch = t.epoch
		for _, sub := range t.subs {
			ds := kmsg.NewStreamsGroupDescribeResponseGroupTopologySubtopology()
			ds.SubtopologyID = sub.id
			ds.SourceTopics = sub.resolvedSources(nil)
			ds.RepartitionSinkTopics = nonNil(slices.Clone(sub.repartitionSinks))
			ds.StateChangelogTopics = describeTopicInfos(sub.changelogs, sg.configured)
			ds.RepartitionSourceTopics = describeTopicInfos(sub.repartitionSources, sg.configured)
			dt.Subtopologies = append(dt.Subtopologies, ds)
		}
		d.Topology = &dt
	}
	d.TopologyDescriptionStatus = topologyDescriptionNotRequested
	if withDescription {
		d.TopologyDescriptionStatus = topologyDescriptionNotStored
	}
	assignment := func(t streamsTasks) kmsg.StreamsAssignment {
		a := kmsg.NewStreamsAssignment()
		a.ActiveTasks = taskIDsOf(sortedTasks(t.active))
		a.StandbyTasks = taskIDsOf(sortedTasks(t.standby))
		a.WarmupTasks = taskIDsOf(sortedTasks(t.warmup))
		return a
	}
	for _, mid := range slices.Sorted(maps.Keys(sg.members)) {
		m := sg.members[mid]
		dm := kmsg.NewStreamsGroupDescribeResponseGroupMember()
		dm.MemberID, dm.MemberEpoch, dm.ClientID, dm.ClientHost = m.id, m.epoch, m.clientID, m.clientHost
		dm.TopologyEpoch, dm.ProcessID = m.topologyEpoch, m.processID
		if m.rack != "" {
			dm.RackID = kmsg.StringPtr(m.rack)
		}
		if m.endpoint != nil {
			dm.UserEndpoint = &kmsg.StreamsGroupDescribeResponseGroupMemberUserEndpoint{Host: m.endpoint.Host, Port: m.endpoint.Port}
		}
		dm.ClientTags = []kmsg.StreamsGroupDescribeResponseGroupMemberClientTag{}
		for _, k := range slices.Sorted(maps.Keys(m.clientTags)) {
			dm.ClientTags = append(dm.ClientTags, kmsg.StreamsGroupDescribeResponseGroupMemberClientTag{Key: k, Value: m.clientTags[k]})
		}
		dm.TaskOffsets = nonNil(slices.Clone(m.taskOffsets))
		dm.TaskEndOffsets = nonNil(slices.Clone(m.taskEndOffsets))
		dm.Assignment = assignment(m.assigned)
		target := sg.target[m.id]
		if target.active == nil {
			target = newStreamsTasks()
		}
		dm.TargetAssignment = assignment(target)
		d.Members = append(d.Members, dm)
	}
	return d
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// describeTopicInfos are internal topics as StreamsGroupDescribe shows
// them: with the partition count the coordinator decided.
func describeTopicInfos(ts []streamsTopic, ct *configuredTopology) []kmsg.TopicInfo {
	out := []kmsg.TopicInfo{}
	for _, t := range ts {
		ti := kmsg.NewTopicInfo()
		ti.Topic, ti.NumPartitions, ti.ReplicationFactor = t.name, t.partitions, t.rf
		if ct != nil && ct.counted != nil && ti.NumPartitions == 0 {
			ti.NumPartitions = ct.counted[t.name]
		}
		ti.Configs = []kmsg.TopicInfoConfig{}
		for _, kv := range t.configs {
			ti.Configs = append(ti.Configs, kmsg.TopicInfoConfig{Key: kv[0], Value: kv[1]})
		}
		out = append(out, ti)
	}
	return out
}
