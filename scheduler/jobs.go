package scheduler

import (
	"fmt"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/internal/jsonw"
	"github.com/kahafs/kahafs/openwire"
)

// JobJSON is one job as a JSON object, for the tree and `holders --json`:
//
//	{"scheduler":"JMS","jobId":"ID:…","destination":"queue://Q",
//	 "start":RFC 3339,"startMillis":…,"delay":ms,"period":ms,"repeat":n,"cron":"",
//	 "nextRun":RFC 3339,"nextRunMillis":…,"rescheduled":n,
//	 "add":"1:100","lastUpdate":"7:2014"|null,
//	 "message":{"headers":…,"properties":…,"body":…}}
//
// repeat is what is left of the job's repeats (the broker counts them
// down at each reschedule of a job without cron); times are UTC with
// milliseconds. The message is the job's payload (the OpenWire message
// the broker sends when the job fires) read from its add record, as the
// message view of the tree shows a message (openwire.Message.AppendJSON);
// one that does not decode is shown with its error.
func JobJSON(st *codec.Store, j *Job, opts openwire.JSONOptions) ([]byte, error) {
	w := jsonw.Object(nil)
	w.Str("scheduler", j.Scheduler)
	w.Str("jobId", j.ID)
	msg, merr, err := jobMessage(st, j)
	if err != nil {
		return nil, err
	}
	if msg != nil && msg.Destination != nil {
		w.Str("destination", msg.Destination.String())
	} else {
		w.Null("destination")
	}
	millis(&w, "start", "startMillis", j.StartTime)
	w.Int("delay", j.Delay)
	w.Int("period", j.Period)
	w.Int("repeat", int64(j.Repeat))
	w.Str("cron", j.Cron)
	millis(&w, "nextRun", "nextRunMillis", j.NextTime)
	w.Int("rescheduled", int64(j.Rescheduled))
	w.Str("add", j.Add.String())
	if j.HasLastUpdate {
		w.Str("lastUpdate", j.LastUpdate.String())
	} else {
		w.Null("lastUpdate")
	}
	w.Open("message")
	if msg != nil {
		msg.AppendJSON(&w, merr, opts)
	} else {
		w.Str("error", merr.Error())
	}
	w.Close()
	return w.End(), nil
}

func millis(w *jsonw.Writer, key, millisKey string, ms int64) {
	if ms <= 0 {
		w.Null(key)
	} else {
		w.Bytes(key, openwire.AppendMillis(nil, ms))
	}
	w.Int(millisKey, ms)
}

// jobMessage reads the job's add record and decodes its payload: the
// message (nil when it is not one) and the decoding error; err is an
// error reading the record.
func jobMessage(st *codec.Store, j *Job) (*openwire.Message, error, error) {
	var fi *codec.FileInfo
	for i := range st.Files {
		if st.Files[i].ID == j.Add.File {
			fi = &st.Files[i]
		}
	}
	if fi == nil {
		return nil, nil, fmt.Errorf("job %s: %s is gone", j.ID, codec.DataFileName(j.Add.File))
	}
	var c codec.Command
	if _, err := codec.ReadRecordAt(*fi, j.Add, &c); err != nil {
		return nil, nil, fmt.Errorf("job %s: %w", j.ID, err)
	}
	if c.Type != codec.AddScheduledJobCommand {
		return nil, nil, fmt.Errorf("job %s: %s: %s, not %s", j.ID, j.Add, c.Type, codec.AddScheduledJobCommand)
	}
	m, err := openwire.DecodeMessage(c.Payload)
	if m == nil && err == nil {
		err = fmt.Errorf("not a message")
	}
	return m, err, nil
}
