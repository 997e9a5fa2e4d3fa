package main

import (
	"fmt"

	"github.com/partner-edge/partner-edge/edge/keys"
	"github.com/partner-edge/partner-edge/upstream/events"
	"github.com/partner-edge/partner-edge/upstream/events/boltevents"
)

// startData opens EDGE_DATA_DIR, where a single edge keeps its events
// feed across restarts (docs/contract.md section 25; upstream/events/
// boltevents), and says at start-up where the feed lives. A directory the
// edge cannot use stops start-up naming the setting. A fleet keeps its one
// feed in Redis: the directory is checked, and holds no feed.
func (p *process) startData() error {
	dir := p.cfg.DataDir
	switch {
	case dir == "" && p.fm != nil:
		return nil
	case dir == "":
		p.log.Info("events feed kept in memory only: a restart forgets it and partners' cursors from before answer 410 EVENTS_CURSOR_EXPIRED; set EDGE_DATA_DIR to keep it")
		return nil
	case p.fm != nil:
		if err := boltevents.CheckDir(dir); err != nil {
			return fmt.Errorf("EDGE_DATA_DIR: %w", err)
		}
		p.log.Info("events feed kept in Redis, the fleet's one feed: EDGE_DATA_DIR holds no feed", "dir", dir)
		return nil
	}
	db, err := boltevents.Open(dir)
	if err != nil {
		return fmt.Errorf("EDGE_DATA_DIR: %w", err)
	}
	p.onStop(func() {
		if err := db.Close(); err != nil {
			p.log.Warn("EDGE_DATA_DIR: closing the events file failed", "file", db.Path(), "error", err)
		}
	})
	p.data = db
	p.log.Info("events feed kept in EDGE_DATA_DIR: cursors outlive a restart", "file", db.Path())
	return nil
}

// dataFeed is one mode's feed in EDGE_DATA_DIR; nil without one (or in a
// fleet, whose feed is in Redis).
func (p *process) dataFeed(mode keys.Mode) (events.Shared, error) {
	if p.data == nil {
		return nil, nil
	}
	return p.data.Feed(boltevents.Config{Brand: p.cfg.Brand, Mode: string(mode),
		Retention: p.cfg.EventsRetention, Max: p.cfg.EventsMax, MaxBytes: p.cfg.EventsMaxBytes})
}
