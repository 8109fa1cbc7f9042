package broker

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/samsa-io/samsa/logstore"
)

// cleanShutdownName is the file a clean shutdown leaves in each of
// log.dirs, with the broker epoch it ended in, as Kafka's
// CleanShutdownFileHandler: the next start registers with that epoch as
// its previous one, which tells the controller that nothing unflushed was
// lost (KIP-966; controller/elr.go). The start removes the files first,
// so that a crash after it leaves none.
const cleanShutdownName = ".kafka_cleanshutdown"

type cleanShutdownValue struct {
	Version     int   `json:"version"`
	BrokerEpoch int64 `json:"brokerEpoch"`
}

// takeCleanShutdown reads and removes the clean shutdown files of
// log.dirs. It returns the epoch they name when every directory has one
// and they agree, else -1 (an unclean shutdown, or a first start). A file
// that cannot be removed is an error: the next crash would pass for a
// clean shutdown.
func (b *Broker) takeCleanShutdown() (int64, error) {
	epoch := int64(0)
	for _, dir := range b.logDirs {
		path := filepath.Join(dir, cleanShutdownName)
		data, err := os.ReadFile(path)
		if err != nil {
			if !errors.Is(err, os.ErrNotExist) {
				b.log.Warn("reading the clean shutdown file", "path", path, "err", err)
			}
			epoch = -1
			continue
		}
		var v cleanShutdownValue
		switch err := json.Unmarshal(data, &v); {
		case err != nil || v.BrokerEpoch <= 0:
			b.log.Warn("malformed clean shutdown file", "path", path, "err", err)
			epoch = -1
		case epoch == 0:
			epoch = v.BrokerEpoch
		case epoch != v.BrokerEpoch:
			epoch = -1
		}
		if err := os.Remove(path); err != nil {
			return 0, fmt.Errorf("broker: removing %s: %w", path, err)
		}
		if err := logstore.OS.SyncDir(dir); err != nil {
			return 0, fmt.Errorf("broker: removing %s: %w", path, err)
		}
	}
	if epoch == 0 {
		epoch = -1
	}
	return epoch, nil
}

// markCleanShutdown writes the clean shutdown file, naming epoch, in each
// online log directory, durably.
func (b *Broker) markCleanShutdown(epoch int64) error {
	data, err := json.Marshal(cleanShutdownValue{Version: 0, BrokerEpoch: epoch})
	if err != nil {
		return err
	}
	var errs []error
	for _, dir := range b.onlineLogDirs() {
		path := filepath.Join(dir, cleanShutdownName)
		tmp := path + ".tmp"
		err := func() error {
			// The partition directories created in it since the last
			// fsync must be durable before the file that vouches for them.
			if err := logstore.OS.SyncDir(dir); err != nil {
				return err
			}
			f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
			if err != nil {
				return err
			}
			_, err = f.Write(data)
			if err == nil {
				err = f.Sync()
			}
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
			if err := os.Rename(tmp, path); err != nil {
				return err
			}
			return logstore.OS.SyncDir(dir)
		}()
		if err != nil {
			errs = append(errs, fmt.Errorf("broker: writing %s: %w", path, err))
		}
	}
	return errors.Join(errs...)
}
