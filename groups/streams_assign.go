package groups

// The "sticky" task assignor of streams groups, after Kafka's
// StickyTaskAssignor: active tasks stay with the member that had them in
// the previous target while it is not above its share, the rest go to
// the least loaded members (those that kept the task as a standby first,
// since their state is warm); then each task gets up to numStandby
// standby tasks, each on a process other than its active task's and the
// other standbys', preferring the members that had it before.

import (
	"cmp"
	"maps"
	"slices"
	"strings"
)

func assignStreamsTasks(members map[string]*streamsMember, prev map[string]streamsTasks, tasks []taskID, numStandby int) map[string]streamsTasks {
	out := map[string]streamsTasks{}
	ids := slices.Sorted(maps.Keys(members))
	for _, id := range ids {
		out[id] = newStreamsTasks()
	}
	if len(ids) == 0 || len(tasks) == 0 {
		return out
	}
	process := func(id string) string {
		if p := members[id].processID; p != "" {
			return p
		}
		return id
	}
	load := func(id string) int { return len(out[id].active) + len(out[id].standby) }
	quota := (len(tasks) + len(ids) - 1) / len(ids)
	owner := map[taskID]string{}
	// Sticky: a task stays where the previous target had it.
	for _, id := range ids {
		for _, t := range sortedTasks(prev[id].active) {
			if _, dup := owner[t]; dup || len(out[id].active) >= quota || !slices.Contains(tasks, t) {
				continue
			}
			owner[t] = id
			out[id].active[t] = 0
		}
	}
	// The least loaded member by count (ties: the smaller id),
	// among those for which ok holds; "" when none.
	least := func(ok func(id string) bool, count func(id string) int) string {
		best := ""
		for _, id := range ids {
			if !ok(id) {
				continue
			}
			if best == "" || cmp.Or(cmp.Compare(count(id), count(best)), strings.Compare(id, best)) < 0 {
				best = id
			}
		}
		return best
	}
	activeLoad := func(id string) int { return len(out[id].active) }
	for _, t := range tasks {
		if _, ok := owner[t]; ok {
			continue
		}
		id := least(func(id string) bool { return prev[id].standby[t] && len(out[id].active) < quota }, activeLoad)
		if id == "" {
			id = least(func(string) bool { return true }, activeLoad)
		}
		owner[t] = id
		out[id].active[t] = 0
	}
	if numStandby <= 0 {
		return out
	}
	for _, t := range tasks {
		used := map[string]bool{process(owner[t]): true}
		for range numStandby {
			free := func(id string) bool { return !used[process(id)] }
			id := least(func(id string) bool { return free(id) && prev[id].standby[t] }, load)
			if id == "" {
				id = least(free, load)
			}
			if id == "" {
				break // fewer processes than replicas
			}
			used[process(id)] = true
			out[id].standby[t] = true
		}
	}
	return out
}
