-- 0023: recurring schedules, and which schedule and occurrence a notification was made for.
-- The materialiser finds due schedules by (state, next_occurrence_at); a sender's
-- list reads (account_id, id). `anchor` and `anchor_before` are where the rule's
-- expansion resumes, so a pass never expands from DTSTART again.

CREATE TABLE schedules (
    id                 {id} PRIMARY KEY,
    account_id         {id} NOT NULL,
    name               text NOT NULL,
    state              text NOT NULL,
    rrule              text NOT NULL,
    start              text NOT NULL,
    time_zone          text NOT NULL,
    exdates            text NOT NULL,
    catch_up_mode      text NOT NULL,
    catch_up_window    integer NOT NULL,
    template           text NOT NULL,
    stream_id          {id},
    next_occurrence_at {time},
    last_occurrence_at {time},
    sent               integer NOT NULL DEFAULT 0,
    missed             integer NOT NULL DEFAULT 0,
    revision           integer NOT NULL DEFAULT 1,
    created_at         {time} NOT NULL,
    anchor             text NOT NULL,
    anchor_before      integer NOT NULL DEFAULT 0,
    paused_at          {time}
);

CREATE INDEX schedules_account ON schedules (account_id, id);
CREATE INDEX schedules_due ON schedules (state, next_occurrence_at);

-- IF NOT EXISTS: another change may add schedule_id for the list's scheduleId filter.
ALTER TABLE notifications ADD COLUMN IF NOT EXISTS schedule_id {id};
ALTER TABLE notifications ADD COLUMN IF NOT EXISTS schedule_occurrence_at {time};
