-- GENERATED FILE, do not edit by hand: the TMS schema as the migrations in
-- sql/migrations/ produce it (pg_dump --schema-only, normalised).
-- Regenerate with: python -m tms.local.schema --write

--
-- PostgreSQL database dump
--

--
-- Name: tms_attempt_state; Type: TYPE; Schema: public; Owner: -
--

CREATE TYPE public.tms_attempt_state AS ENUM (
    'RUNNING',
    'SUCCEEDED',
    'FAILED',
    'CANCELLED',
    'LOST',
    'HANDED_BACK',
    'SKIPPED'
);

--
-- Name: tms_catalog_type; Type: TYPE; Schema: public; Owner: -
--

CREATE TYPE public.tms_catalog_type AS ENUM (
    'sql',
    'jdbc',
    'rest',
    'hive',
    'glue',
    'hadoop'
);

--
-- Name: tms_operation_state; Type: TYPE; Schema: public; Owner: -
--

CREATE TYPE public.tms_operation_state AS ENUM (
    'QUEUED',
    'RUNNING',
    'SUCCEEDED',
    'FAILED',
    'CANCELLED',
    'SKIPPED'
);

--
-- Name: tms_table_state; Type: TYPE; Schema: public; Owner: -
--

CREATE TYPE public.tms_table_state AS ENUM (
    'ACTIVE',
    'PAUSED',
    'MISSING'
);

--
-- Name: tms_attempt_close(bigint, integer, public.tms_attempt_state, text, jsonb, text, integer, timestamp with time zone); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.tms_attempt_close(p_operation_id bigint, p_attempt integer, p_state public.tms_attempt_state, p_error text, p_result jsonb DEFAULT NULL::jsonb, p_log_tail text DEFAULT NULL::text, p_exit_code integer DEFAULT NULL::integer, p_retry_at timestamp with time zone DEFAULT NULL::timestamp with time zone) RETURNS boolean
    LANGUAGE sql
    AS $$
    WITH closed AS (
        UPDATE tms_attempts
        SET state = p_state, finished_at = now(), error = p_error, result = p_result,
            log_tail = p_log_tail, exit_code = p_exit_code, retry_at = p_retry_at
        WHERE operation_id = p_operation_id AND attempt = p_attempt AND state = 'RUNNING'
        RETURNING 1
    )
    SELECT EXISTS (SELECT 1 FROM closed)
$$;

--
-- Name: tms_action_holds; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.tms_action_holds (
    table_pk bigint NOT NULL,
    action text NOT NULL,
    state text NOT NULL,
    failures integer NOT NULL,
    last_operation_id bigint NOT NULL,
    holds integer NOT NULL,
    reason text NOT NULL,
    held_at timestamp with time zone NOT NULL,
    held_until timestamp with time zone NOT NULL,
    commit_seq bigint DEFAULT 0 NOT NULL,
    policy_digest text NOT NULL,
    released_at timestamp with time zone,
    released_by text,
    released_after_id bigint DEFAULT 0 NOT NULL,
    version bigint DEFAULT 0 NOT NULL,
    CONSTRAINT tms_action_holds_failures_check CHECK ((failures >= 0)),
    CONSTRAINT tms_action_holds_holds_check CHECK ((holds >= 0)),
    CONSTRAINT tms_action_holds_released_by_check CHECK ((released_by = ANY (ARRAY['commit'::text, 'policy'::text, 'resume'::text, 'success'::text]))),
    CONSTRAINT tms_action_holds_state_check CHECK ((state = ANY (ARRAY['HELD'::text, 'RELEASED'::text])))
);

--
-- Name: tms_attempts; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.tms_attempts (
    operation_id bigint NOT NULL,
    attempt integer NOT NULL,
    executor_id text NOT NULL,
    state public.tms_attempt_state DEFAULT 'RUNNING'::public.tms_attempt_state NOT NULL,
    started_at timestamp with time zone DEFAULT now() NOT NULL,
    finished_at timestamp with time zone,
    engine_handle text,
    exit_code integer,
    error text,
    log_tail text,
    result jsonb,
    retry_at timestamp with time zone,
    progress jsonb,
    report_token_sha256 bytea,
    reported_result jsonb,
    reported_at timestamp with time zone,
    CONSTRAINT tms_attempts_attempt_check CHECK ((attempt >= 1)),
    CONSTRAINT tms_attempts_check CHECK (((state = 'RUNNING'::public.tms_attempt_state) = (finished_at IS NULL))),
    CONSTRAINT tms_attempts_report_token_sha256_check CHECK (((report_token_sha256 IS NULL) OR (octet_length(report_token_sha256) = 32))),
    CONSTRAINT tms_attempts_reported_check CHECK (((reported_result IS NULL) = (reported_at IS NULL))),
    CONSTRAINT tms_attempts_reported_result_check CHECK (((reported_result IS NULL) OR (jsonb_typeof(reported_result) = 'object'::text)))
);

--
-- Name: tms_catalogs; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.tms_catalogs (
    id bigint NOT NULL,
    catalog_id text NOT NULL,
    type public.tms_catalog_type NOT NULL,
    properties jsonb DEFAULT '{}'::jsonb NOT NULL,
    secrets jsonb DEFAULT '{}'::jsonb NOT NULL,
    storage_options jsonb DEFAULT '{}'::jsonb NOT NULL,
    allowed_locations text[] DEFAULT '{}'::text[] NOT NULL,
    allowed_owners text[] DEFAULT '{}'::text[] NOT NULL,
    allowed_tokens text[] DEFAULT '{}'::text[] NOT NULL,
    default_policy jsonb DEFAULT '{}'::jsonb NOT NULL,
    discovery_enabled boolean DEFAULT false NOT NULL,
    discovery_include text[] DEFAULT '{}'::text[] NOT NULL,
    discovery_exclude text[] DEFAULT '{}'::text[] NOT NULL,
    discovery_queue text DEFAULT 'default'::text NOT NULL,
    discovery_owner text DEFAULT ''::text NOT NULL,
    discovery_priority integer DEFAULT 0 NOT NULL,
    discovery_interval_s integer DEFAULT 300 NOT NULL,
    discovery_next_at timestamp with time zone DEFAULT now() NOT NULL,
    discovery_last_at timestamp with time zone,
    discovery_last_error text,
    discovery_last_registered integer,
    discovery_last_missing integer,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT tms_catalogs_catalog_id_check CHECK ((catalog_id ~ '^[a-z][a-z0-9_]{0,62}$'::text)),
    CONSTRAINT tms_catalogs_default_policy_check CHECK ((jsonb_typeof(default_policy) = 'object'::text)),
    CONSTRAINT tms_catalogs_discovery_interval_s_check CHECK (((discovery_interval_s >= 10) AND (discovery_interval_s <= 86400))),
    CONSTRAINT tms_catalogs_discovery_priority_check CHECK (((discovery_priority >= '-1000'::integer) AND (discovery_priority <= 1000))),
    CONSTRAINT tms_catalogs_properties_check CHECK ((jsonb_typeof(properties) = 'object'::text)),
    CONSTRAINT tms_catalogs_secrets_check CHECK ((jsonb_typeof(secrets) = 'object'::text)),
    CONSTRAINT tms_catalogs_storage_options_check CHECK ((jsonb_typeof(storage_options) = 'object'::text))
);

--
-- Name: tms_catalogs_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.tms_catalogs ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.tms_catalogs_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: tms_commit_events; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.tms_commit_events (
    table_pk bigint NOT NULL,
    commit_id text NOT NULL,
    commit_time timestamp with time zone,
    received_at timestamp with time zone DEFAULT now() NOT NULL,
    files_added bigint,
    bytes_added bigint,
    operation_type text DEFAULT ''::text NOT NULL,
    seq bigint NOT NULL,
    CONSTRAINT tms_commit_events_bytes_added_check CHECK ((bytes_added >= 0)),
    CONSTRAINT tms_commit_events_files_added_check CHECK ((files_added >= 0))
);

--
-- Name: tms_commit_events_seq_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.tms_commit_events ALTER COLUMN seq ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.tms_commit_events_seq_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: tms_decisions; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.tms_decisions (
    table_pk bigint NOT NULL,
    action text NOT NULL,
    decided_at timestamp with time zone DEFAULT now() NOT NULL,
    should_run boolean NOT NULL,
    reason text NOT NULL,
    metrics jsonb DEFAULT '{}'::jsonb NOT NULL,
    operation_id bigint,
    scheduler_id text NOT NULL,
    benefit double precision,
    CONSTRAINT tms_decisions_benefit_check CHECK (((benefit IS NULL) OR ((benefit >= (0)::double precision) AND (benefit < 'Infinity'::double precision))))
);

--
-- Name: tms_dirty_tables; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.tms_dirty_tables (
    table_pk bigint NOT NULL,
    since timestamp with time zone DEFAULT now() NOT NULL,
    traceparent text
);

--
-- Name: tms_operations; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.tms_operations (
    id bigint NOT NULL,
    table_pk bigint NOT NULL,
    action text NOT NULL,
    state public.tms_operation_state DEFAULT 'QUEUED'::public.tms_operation_state NOT NULL,
    attempt integer DEFAULT 0 NOT NULL,
    max_attempts integer DEFAULT 3 NOT NULL,
    priority integer DEFAULT 0 NOT NULL,
    trigger text DEFAULT 'policy'::text NOT NULL,
    reason text NOT NULL,
    params jsonb DEFAULT '{}'::jsonb NOT NULL,
    metrics jsonb DEFAULT '{}'::jsonb NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone,
    lease_owner text,
    lease_expires_at timestamp with time zone,
    engine_handle text,
    exit_code integer,
    result jsonb,
    error text,
    log_tail text,
    cancel_requested boolean DEFAULT false NOT NULL,
    retry_of bigint,
    queue text DEFAULT 'default'::text NOT NULL,
    run_after timestamp with time zone DEFAULT now() NOT NULL,
    traceparent text,
    handed_back integer DEFAULT 0 NOT NULL,
    benefit double precision,
    waits_for text[] DEFAULT '{}'::text[] NOT NULL,
    CONSTRAINT tms_operations_action_check CHECK ((action ~ '^[a-z][a-z0-9_-]{0,31}$'::text)),
    CONSTRAINT tms_operations_attempt_check CHECK ((attempt >= 0)),
    CONSTRAINT tms_operations_benefit_check CHECK (((benefit IS NULL) OR ((benefit >= (0)::double precision) AND (benefit < 'Infinity'::double precision)))),
    CONSTRAINT tms_operations_cancel_active CHECK (((NOT cancel_requested) OR (state = ANY (ARRAY['QUEUED'::public.tms_operation_state, 'RUNNING'::public.tms_operation_state, 'CANCELLED'::public.tms_operation_state])))),
    CONSTRAINT tms_operations_check1 CHECK (((state <> 'RUNNING'::public.tms_operation_state) OR ((lease_owner IS NOT NULL) AND (lease_expires_at IS NOT NULL) AND (attempt >= 1)))),
    CONSTRAINT tms_operations_finished_check CHECK (((state <> ALL (ARRAY['QUEUED'::public.tms_operation_state, 'RUNNING'::public.tms_operation_state])) = (finished_at IS NOT NULL))),
    CONSTRAINT tms_operations_handed_back_range CHECK (((handed_back >= 0) AND (handed_back <= attempt))),
    CONSTRAINT tms_operations_max_attempts_check CHECK ((max_attempts >= 1)),
    CONSTRAINT tms_operations_trigger_check CHECK ((trigger = ANY (ARRAY['policy'::text, 'manual'::text, 'retry'::text]))),
    CONSTRAINT tms_operations_waits_for_check CHECK ((cardinality(waits_for) <= 16))
);

--
-- Name: tms_operations_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.tms_operations ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.tms_operations_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: tms_processes; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.tms_processes (
    id text NOT NULL,
    kind text NOT NULL,
    host text DEFAULT ''::text NOT NULL,
    started_at timestamp with time zone NOT NULL,
    heartbeat_at timestamp with time zone DEFAULT now() NOT NULL,
    interval_s double precision NOT NULL,
    leader boolean DEFAULT false NOT NULL,
    shards integer[] DEFAULT '{}'::integer[] NOT NULL,
    running_operations text[] DEFAULT '{}'::text[] NOT NULL,
    CONSTRAINT tms_processes_host_check CHECK ((length(host) <= 255)),
    CONSTRAINT tms_processes_id_check CHECK (((length(id) >= 1) AND (length(id) <= 200))),
    CONSTRAINT tms_processes_interval_s_check CHECK ((interval_s > (0)::double precision)),
    CONSTRAINT tms_processes_kind_check CHECK ((kind = ANY (ARRAY['scheduler'::text, 'executor'::text])))
);

--
-- Name: tms_queues; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.tms_queues (
    name text NOT NULL,
    max_running integer,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT tms_queues_max_running_check CHECK ((max_running >= 0)),
    CONSTRAINT tms_queues_name_check CHECK ((name ~ '^[a-z][a-z0-9_-]{0,62}$'::text))
);

--
-- Name: tms_read_column_sets; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.tms_read_column_sets (
    table_pk bigint NOT NULL,
    columns text[] NOT NULL,
    weight double precision NOT NULL,
    updated_at timestamp with time zone NOT NULL,
    CONSTRAINT tms_read_column_sets_columns_check CHECK (((cardinality(columns) >= 1) AND (cardinality(columns) <= 4))),
    CONSTRAINT tms_read_column_sets_weight_check CHECK ((weight >= (0)::double precision))
);

--
-- Name: tms_read_predicates; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.tms_read_predicates (
    table_pk bigint NOT NULL,
    column_name text NOT NULL,
    operator text NOT NULL,
    weight double precision NOT NULL,
    updated_at timestamp with time zone NOT NULL,
    CONSTRAINT tms_read_predicates_column_name_check CHECK (((length(column_name) >= 1) AND (length(column_name) <= 256))),
    CONSTRAINT tms_read_predicates_operator_check CHECK ((operator = ANY (ARRAY['eq'::text, 'range'::text, 'in'::text, 'null'::text, 'other'::text, 'projected'::text]))),
    CONSTRAINT tms_read_predicates_weight_check CHECK ((weight >= (0)::double precision))
);

--
-- Name: tms_read_scans; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.tms_read_scans (
    table_pk bigint NOT NULL,
    scans double precision NOT NULL,
    filtered_scans double precision NOT NULL,
    result_files double precision NOT NULL,
    skipped_files double precision NOT NULL,
    result_bytes double precision NOT NULL,
    reports bigint DEFAULT 0 NOT NULL,
    first_at timestamp with time zone NOT NULL,
    updated_at timestamp with time zone NOT NULL,
    CONSTRAINT tms_read_scans_filtered_scans_check CHECK ((filtered_scans >= (0)::double precision)),
    CONSTRAINT tms_read_scans_reports_check CHECK ((reports >= 0)),
    CONSTRAINT tms_read_scans_result_bytes_check CHECK ((result_bytes >= (0)::double precision)),
    CONSTRAINT tms_read_scans_result_files_check CHECK ((result_files >= (0)::double precision)),
    CONSTRAINT tms_read_scans_scans_check CHECK ((scans >= (0)::double precision)),
    CONSTRAINT tms_read_scans_skipped_files_check CHECK ((skipped_files >= (0)::double precision))
);

--
-- Name: tms_requests; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.tms_requests (
    request_id text NOT NULL,
    method text NOT NULL,
    fingerprint text NOT NULL,
    resource text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT tms_requests_request_id_check CHECK (((length(request_id) >= 1) AND (length(request_id) <= 128)))
);

--
-- Name: tms_schema_migrations; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.tms_schema_migrations (
    version integer NOT NULL,
    name text NOT NULL,
    applied_at timestamp with time zone DEFAULT now() NOT NULL
);

--
-- Name: tms_table_health; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.tms_table_health (
    table_pk bigint NOT NULL,
    inspected_at timestamp with time zone NOT NULL,
    score smallint NOT NULL,
    parts jsonb DEFAULT '[]'::jsonb NOT NULL,
    partitions jsonb DEFAULT '[]'::jsonb NOT NULL,
    CONSTRAINT tms_table_health_score_check CHECK (((score >= 0) AND (score <= 100)))
);

--
-- Name: tms_table_history; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.tms_table_history (
    table_pk bigint NOT NULL,
    at timestamp with time zone NOT NULL,
    data_files bigint NOT NULL,
    small_files bigint NOT NULL,
    mean_file_bytes bigint NOT NULL,
    total_bytes bigint NOT NULL,
    delete_files integer NOT NULL,
    snapshots integer NOT NULL,
    manifests integer NOT NULL,
    health_score smallint,
    resolution smallint DEFAULT 0 NOT NULL,
    CONSTRAINT tms_table_history_health_score_check CHECK (((health_score >= 0) AND (health_score <= 100))),
    CONSTRAINT tms_table_history_resolution_check CHECK ((resolution = ANY (ARRAY[0, 1, 2])))
);

--
-- Name: tms_tables; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.tms_tables (
    id bigint NOT NULL,
    table_id text NOT NULL,
    format text NOT NULL,
    catalog text NOT NULL,
    namespace text DEFAULT ''::text NOT NULL,
    table_name text DEFAULT ''::text NOT NULL,
    base_path text DEFAULT ''::text NOT NULL,
    owner text DEFAULT ''::text NOT NULL,
    queue text DEFAULT 'default'::text NOT NULL,
    priority integer DEFAULT 0 NOT NULL,
    policy jsonb DEFAULT '{}'::jsonb NOT NULL,
    state public.tms_table_state DEFAULT 'ACTIVE'::public.tms_table_state NOT NULL,
    next_check_at timestamp with time zone DEFAULT now() NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    pruned_commits bigint DEFAULT 0 NOT NULL,
    pruned_last_commit_id text,
    pruned_last_commit_time timestamp with time zone,
    location text DEFAULT ''::text NOT NULL,
    discovered boolean DEFAULT false NOT NULL,
    checked_at timestamp with time zone,
    health_score smallint,
    state_reason text DEFAULT ''::text NOT NULL,
    CONSTRAINT tms_tables_check1 CHECK (((base_path <> ''::text) OR (table_name <> ''::text))),
    CONSTRAINT tms_tables_format_check CHECK ((format ~ '^[a-z][a-z0-9_-]{0,31}$'::text)),
    CONSTRAINT tms_tables_health_score_check CHECK (((health_score >= 0) AND (health_score <= 100))),
    CONSTRAINT tms_tables_priority_check CHECK (((priority >= '-1000'::integer) AND (priority <= 1000))),
    CONSTRAINT tms_tables_pruned_commits_check CHECK ((pruned_commits >= 0)),
    CONSTRAINT tms_tables_state_reason_check CHECK ((length(state_reason) <= 1000)),
    CONSTRAINT tms_tables_table_id_check CHECK ((table_id ~ '^[a-z][a-z0-9_.-]{0,62}$'::text))
);

--
-- Name: tms_tables_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.tms_tables ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.tms_tables_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: tms_tables_view; Type: VIEW; Schema: public; Owner: -
--

CREATE VIEW public.tms_tables_view AS
 SELECT t.id,
    t.table_id,
    t.format,
    t.catalog,
    t.namespace,
    t.table_name,
    t.base_path,
    t.owner,
    t.queue,
    t.priority,
    t.policy,
    t.state,
    t.next_check_at,
    t.created_at,
    t.updated_at,
    t.pruned_commits,
    t.pruned_last_commit_id,
    t.pruned_last_commit_time,
    t.location,
    t.discovered,
    t.checked_at,
    t.health_score,
    t.state_reason,
    (t.pruned_commits + c.n) AS commit_count,
    COALESCE(l.commit_id, t.pruned_last_commit_id) AS last_commit_id,
    COALESCE(l.at, t.pruned_last_commit_time) AS last_commit_time,
    ld.last_decision,
    lo.last_operation_id,
    lo.last_operation_state
   FROM ((((public.tms_tables t
     CROSS JOIN LATERAL ( SELECT count(*) AS n
           FROM public.tms_commit_events e
          WHERE (e.table_pk = t.id)) c)
     LEFT JOIN LATERAL ( SELECT e.commit_id,
            COALESCE(e.commit_time, e.received_at) AS at
           FROM public.tms_commit_events e
          WHERE (e.table_pk = t.id)
          ORDER BY e.seq DESC
         LIMIT 1) l ON (true))
     LEFT JOIN LATERAL ( SELECT ((d.action || ': '::text) || d.reason) AS last_decision
           FROM public.tms_decisions d
          WHERE (d.table_pk = t.id)
          ORDER BY d.decided_at DESC, d.action
         LIMIT 1) ld ON (true))
     LEFT JOIN LATERAL ( SELECT o.id AS last_operation_id,
            (o.state)::text AS last_operation_state
           FROM public.tms_operations o
          WHERE (o.table_pk = t.id)
          ORDER BY o.id DESC
         LIMIT 1) lo ON (true));

--
-- Name: tms_action_holds tms_action_holds_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.tms_action_holds
    ADD CONSTRAINT tms_action_holds_pkey PRIMARY KEY (table_pk, action);

--
-- Name: tms_attempts tms_attempts_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.tms_attempts
    ADD CONSTRAINT tms_attempts_pkey PRIMARY KEY (operation_id, attempt);

--
-- Name: tms_catalogs tms_catalogs_catalog_id_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.tms_catalogs
    ADD CONSTRAINT tms_catalogs_catalog_id_key UNIQUE (catalog_id);

--
-- Name: tms_catalogs tms_catalogs_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.tms_catalogs
    ADD CONSTRAINT tms_catalogs_pkey PRIMARY KEY (id);

--
-- Name: tms_commit_events tms_commit_events_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.tms_commit_events
    ADD CONSTRAINT tms_commit_events_pkey PRIMARY KEY (table_pk, commit_id);

--
-- Name: tms_decisions tms_decisions_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.tms_decisions
    ADD CONSTRAINT tms_decisions_pkey PRIMARY KEY (table_pk, action);

--
-- Name: tms_dirty_tables tms_dirty_tables_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.tms_dirty_tables
    ADD CONSTRAINT tms_dirty_tables_pkey PRIMARY KEY (table_pk);

--
-- Name: tms_operations tms_operations_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.tms_operations
    ADD CONSTRAINT tms_operations_pkey PRIMARY KEY (id);

--
-- Name: tms_processes tms_processes_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.tms_processes
    ADD CONSTRAINT tms_processes_pkey PRIMARY KEY (id);

--
-- Name: tms_queues tms_queues_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.tms_queues
    ADD CONSTRAINT tms_queues_pkey PRIMARY KEY (name);

--
-- Name: tms_read_column_sets tms_read_column_sets_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.tms_read_column_sets
    ADD CONSTRAINT tms_read_column_sets_pkey PRIMARY KEY (table_pk, columns);

--
-- Name: tms_read_predicates tms_read_predicates_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.tms_read_predicates
    ADD CONSTRAINT tms_read_predicates_pkey PRIMARY KEY (table_pk, column_name, operator);

--
-- Name: tms_read_scans tms_read_scans_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.tms_read_scans
    ADD CONSTRAINT tms_read_scans_pkey PRIMARY KEY (table_pk);

--
-- Name: tms_requests tms_requests_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.tms_requests
    ADD CONSTRAINT tms_requests_pkey PRIMARY KEY (request_id);

--
-- Name: tms_schema_migrations tms_schema_migrations_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.tms_schema_migrations
    ADD CONSTRAINT tms_schema_migrations_pkey PRIMARY KEY (version);

--
-- Name: tms_table_health tms_table_health_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.tms_table_health
    ADD CONSTRAINT tms_table_health_pkey PRIMARY KEY (table_pk);

--
-- Name: tms_table_history tms_table_history_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.tms_table_history
    ADD CONSTRAINT tms_table_history_pkey PRIMARY KEY (table_pk, at);

--
-- Name: tms_tables tms_tables_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.tms_tables
    ADD CONSTRAINT tms_tables_pkey PRIMARY KEY (id);

--
-- Name: tms_tables tms_tables_table_id_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.tms_tables
    ADD CONSTRAINT tms_tables_table_id_key UNIQUE (table_id);

--
-- Name: tms_action_holds_held; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX tms_action_holds_held ON public.tms_action_holds USING btree (held_at, table_pk) WHERE (state = 'HELD'::text);

--
-- Name: tms_catalogs_discovery_due; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX tms_catalogs_discovery_due ON public.tms_catalogs USING btree (discovery_next_at) WHERE discovery_enabled;

--
-- Name: tms_commit_events_age; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX tms_commit_events_age ON public.tms_commit_events USING btree (received_at);

--
-- Name: tms_commit_events_latest; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX tms_commit_events_latest ON public.tms_commit_events USING btree (table_pk, seq DESC);

--
-- Name: tms_operations_by_table; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX tms_operations_by_table ON public.tms_operations USING btree (table_pk, id DESC);

--
-- Name: tms_operations_created; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX tms_operations_created ON public.tms_operations USING btree (created_at DESC, id DESC);

--
-- Name: tms_operations_finished; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX tms_operations_finished ON public.tms_operations USING btree (finished_at) WHERE (state <> ALL (ARRAY['QUEUED'::public.tms_operation_state, 'RUNNING'::public.tms_operation_state]));

--
-- Name: tms_operations_leases; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX tms_operations_leases ON public.tms_operations USING btree (lease_expires_at) WHERE (state = 'RUNNING'::public.tms_operation_state);

--
-- Name: tms_operations_one_active; Type: INDEX; Schema: public; Owner: -
--

CREATE UNIQUE INDEX tms_operations_one_active ON public.tms_operations USING btree (table_pk, action) WHERE (state = ANY (ARRAY['QUEUED'::public.tms_operation_state, 'RUNNING'::public.tms_operation_state]));

--
-- Name: tms_operations_one_running; Type: INDEX; Schema: public; Owner: -
--

CREATE UNIQUE INDEX tms_operations_one_running ON public.tms_operations USING btree (table_pk) WHERE (state = 'RUNNING'::public.tms_operation_state);

--
-- Name: tms_operations_queue; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX tms_operations_queue ON public.tms_operations USING btree (priority DESC, benefit DESC NULLS LAST, id) WHERE (state = 'QUEUED'::public.tms_operation_state);

--
-- Name: tms_operations_running_queue; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX tms_operations_running_queue ON public.tms_operations USING btree (queue) WHERE (state = 'RUNNING'::public.tms_operation_state);

--
-- Name: tms_processes_heartbeat; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX tms_processes_heartbeat ON public.tms_processes USING btree (heartbeat_at);

--
-- Name: tms_requests_age; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX tms_requests_age ON public.tms_requests USING btree (created_at);

--
-- Name: tms_tables_due; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX tms_tables_due ON public.tms_tables USING btree (next_check_at) WHERE (state = 'ACTIVE'::public.tms_table_state);

--
-- Name: tms_tables_health_asc; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX tms_tables_health_asc ON public.tms_tables USING btree (COALESCE((health_score)::integer, 101), table_id);

--
-- Name: tms_tables_health_desc; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX tms_tables_health_desc ON public.tms_tables USING btree (COALESCE((health_score)::integer, '-1'::integer), table_id);

--
-- Name: tms_tables_identifier; Type: INDEX; Schema: public; Owner: -
--

CREATE UNIQUE INDEX tms_tables_identifier ON public.tms_tables USING btree (catalog, namespace, table_name) WHERE ((table_name <> ''::text) AND (base_path = ''::text));

--
-- Name: tms_tables_location; Type: INDEX; Schema: public; Owner: -
--

CREATE UNIQUE INDEX tms_tables_location ON public.tms_tables USING btree (location) WHERE (location <> ''::text);

--
-- Name: tms_tables_location_bytes; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX tms_tables_location_bytes ON public.tms_tables USING btree (location COLLATE "C") WHERE (location <> ''::text);

--
-- Name: tms_tables_location_trimmed; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX tms_tables_location_trimmed ON public.tms_tables USING btree (rtrim(location, '/'::text)) WHERE (location <> ''::text);

--
-- Name: tms_tables_owner; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX tms_tables_owner ON public.tms_tables USING btree (owner, table_id);

--
-- Name: tms_action_holds tms_action_holds_table_pk_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.tms_action_holds
    ADD CONSTRAINT tms_action_holds_table_pk_fkey FOREIGN KEY (table_pk) REFERENCES public.tms_tables(id) ON DELETE CASCADE;

--
-- Name: tms_attempts tms_attempts_operation_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.tms_attempts
    ADD CONSTRAINT tms_attempts_operation_id_fkey FOREIGN KEY (operation_id) REFERENCES public.tms_operations(id) ON DELETE CASCADE;

--
-- Name: tms_decisions tms_decisions_operation_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.tms_decisions
    ADD CONSTRAINT tms_decisions_operation_id_fkey FOREIGN KEY (operation_id) REFERENCES public.tms_operations(id) ON DELETE SET NULL;

--
-- Name: tms_decisions tms_decisions_table_pk_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.tms_decisions
    ADD CONSTRAINT tms_decisions_table_pk_fkey FOREIGN KEY (table_pk) REFERENCES public.tms_tables(id) ON DELETE CASCADE;

--
-- Name: tms_operations tms_operations_retry_of_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.tms_operations
    ADD CONSTRAINT tms_operations_retry_of_fkey FOREIGN KEY (retry_of) REFERENCES public.tms_operations(id) ON DELETE SET NULL;

--
-- Name: tms_operations tms_operations_table_pk_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.tms_operations
    ADD CONSTRAINT tms_operations_table_pk_fkey FOREIGN KEY (table_pk) REFERENCES public.tms_tables(id) ON DELETE CASCADE;

--
-- Name: tms_read_column_sets tms_read_column_sets_table_pk_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.tms_read_column_sets
    ADD CONSTRAINT tms_read_column_sets_table_pk_fkey FOREIGN KEY (table_pk) REFERENCES public.tms_tables(id) ON DELETE CASCADE;

--
-- Name: tms_read_predicates tms_read_predicates_table_pk_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.tms_read_predicates
    ADD CONSTRAINT tms_read_predicates_table_pk_fkey FOREIGN KEY (table_pk) REFERENCES public.tms_tables(id) ON DELETE CASCADE;

--
-- Name: tms_read_scans tms_read_scans_table_pk_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.tms_read_scans
    ADD CONSTRAINT tms_read_scans_table_pk_fkey FOREIGN KEY (table_pk) REFERENCES public.tms_tables(id) ON DELETE CASCADE;

--
-- Name: tms_table_health tms_table_health_table_pk_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.tms_table_health
    ADD CONSTRAINT tms_table_health_table_pk_fkey FOREIGN KEY (table_pk) REFERENCES public.tms_tables(id) ON DELETE CASCADE;

--
-- Name: tms_table_history tms_table_history_table_pk_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.tms_table_history
    ADD CONSTRAINT tms_table_history_table_pk_fkey FOREIGN KEY (table_pk) REFERENCES public.tms_tables(id) ON DELETE CASCADE;

--
-- Name: tms_tables tms_tables_catalog_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.tms_tables
    ADD CONSTRAINT tms_tables_catalog_fkey FOREIGN KEY (catalog) REFERENCES public.tms_catalogs(catalog_id) ON DELETE RESTRICT;

--
-- PostgreSQL database dump complete
--
