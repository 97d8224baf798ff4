//! The access point as a service: the pure job queue (`schedd::JobQueue`)
//! kept equal to the durable one (`store::Store`), and the API's requests
//! carried out against both. Plain synchronous code, so every request can
//! be tested without a socket; `server.rs` puts it behind HTTP.
//!
//! Every write follows one order: the core decides (and changes the queue
//! in memory), the store commits the change, and only then is the answer
//! given and the job event log written. When the store refuses, the change
//! is undone in memory and the request fails: nothing unacknowledged stays,
//! nothing acknowledged is lost.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use classad::{ClassAd, Env, Expr, Value};
use schedd::job::attr;
use schedd::Factory;
use schedd::{
    Change, EditError, EditPlan, EditRules, EditTarget, JobId, JobQueue, JobStatus, LogFormat,
    StatusCounts, SubmitPolicy, SuperUsers, SystemPolicy, UserAction,
};
use store::{FactoryRecord, HistoryQuery, HistoryRow, Op, Store};
use wire::api::{
    ActAnswer, ActRequest, Action, Failure, Hello, HistoryAnswer, HistoryRequest, JobSpec,
    NewCluster, QueryAnswer, QueryRequest, Selection, SubmitRequest, Submitted, Totals,
};

/// What the access point is configured to do.
#[derive(Clone, Debug)]
pub struct PoolConfig {
    /// `QUEUE_SUPER_USERS`: they may act on every job.
    pub super_users: SuperUsers,
    /// Job transforms and submit requirements.
    pub submit_policy: SubmitPolicy,
    /// `SYSTEM_PERIODIC_HOLD/RELEASE/REMOVE`.
    pub system_policy: SystemPolicy,
    /// Seconds between evaluations of periodic job policy
    /// (`PERIODIC_EXPR_INTERVAL`).
    pub periodic_interval: u64,
    /// The schedd's name for tools' banners (the host's name).
    pub schedd_name: String,
    /// The local zone, seconds east of UTC, for the job event log.
    pub utc_offset: i32,
    /// UID_DOMAIN: jobs are accounted to `User = "owner@UID_DOMAIN"`.
    pub uid_domain: String,
    /// Which attributes of a queued job may not be edited, or only by
    /// queue super users (`[SYSTEM_]IMMUTABLE_JOB_ATTRS`, ...).
    pub edit_rules: EditRules,
    /// Whether `userHome()` looks users up in the password database
    /// (CLASSAD_ENABLE_USER_HOME, true by default as in HTCondor).
    pub user_home: bool,
    /// The configuration late materialization makes jobs with (the
    /// submit language's defaults, as HTCondor's schedd uses its own).
    pub materialize_config: Arc<config::Config>,
    /// The most jobs of one factory present at once, whatever its
    /// JobMaterializeLimit: MAX_MATERIALIZED_JOBS_PER_CLUSTER and
    /// MAX_JOBS_PER_SUBMISSION, the smaller (HTCondor's schedd too).
    pub max_materialized_per_cluster: i64,
}

impl Default for PoolConfig {
    fn default() -> PoolConfig {
        PoolConfig {
            super_users: SuperUsers::default(),
            submit_policy: SubmitPolicy::none(),
            system_policy: SystemPolicy::none(),
            periodic_interval: 60,
            schedd_name: "localhost".into(),
            utc_offset: 0,
            uid_domain: "localhost".into(),
            edit_rules: EditRules::default(),
            user_home: true,
            materialize_config: Arc::new(config::Config::empty("SCHEDD")),
            max_materialized_per_cluster: 20_000,
        }
    }
}

impl PoolConfig {
    /// Reads the schedd's parameters from a loaded configuration.
    pub fn from_config(config: &config::Config, utc_offset: i32) -> Result<PoolConfig, String> {
        let super_users = SuperUsers::from_config(config).map_err(|e| e.to_string())?;
        let submit_policy = SubmitPolicy::from_config(config).map_err(|e| e.to_string())?;
        let system_policy = SystemPolicy::from_config(config).map_err(|e| e.to_string())?;
        let periodic_interval = config
            .integer_or("PERIODIC_EXPR_INTERVAL", 60)
            .map_err(|e| e.to_string())?
            .max(1) as u64;
        let hostname = config
            .get("FULL_HOSTNAME")
            .ok()
            .flatten()
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "localhost".into());
        // SCHEDD_NAME as HTCondor builds a daemon's name (`name@host`),
        // so that several schedds may share a host.
        let schedd_name = startd::publish::daemon_name(
            &config.get("SCHEDD_NAME").ok().flatten().unwrap_or_default(),
            &hostname,
        );
        let uid_domain = config
            .get("UID_DOMAIN")
            .ok()
            .flatten()
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| hostname.clone());
        let edit_rules = EditRules::from_config(config).map_err(|e| e.to_string())?;
        let user_home = config
            .boolean("CLASSAD_ENABLE_USER_HOME")
            .map_err(|e| e.to_string())?
            .unwrap_or(true);
        let per_submission = config
            .integer_or("MAX_JOBS_PER_SUBMISSION", 20_000)
            .map_err(|e| e.to_string())?;
        let per_cluster = config
            .integer("MAX_MATERIALIZED_JOBS_PER_CLUSTER")
            .map_err(|e| e.to_string())?
            .unwrap_or(i64::from(i32::MAX));
        Ok(PoolConfig {
            max_materialized_per_cluster: per_submission.min(per_cluster).max(1),
            materialize_config: Arc::new(config.clone()),
            user_home,
            edit_rules,
            uid_domain,
            super_users,
            submit_policy,
            system_policy,
            periodic_interval,
            schedd_name,
            utc_offset,
        })
    }
}

/// A refused request: the HTTP status and a message for the person.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiError {
    pub status: u16,
    pub message: String,
}

impl ApiError {
    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError {
            status: 400,
            message: message.into(),
        }
    }

    pub fn forbidden(message: impl Into<String>) -> ApiError {
        ApiError {
            status: 403,
            message: message.into(),
        }
    }

    /// An edit refused by the queue's rules: 400 (EINVAL), 403 (EACCES) or
    /// 404 (ENOENT), with HTCondor's message.
    pub fn edit(e: EditError) -> ApiError {
        let status = match e.errno() {
            schedd::edit::EACCES => 403,
            schedd::edit::ENOENT => 404,
            _ => 400,
        };
        ApiError {
            status,
            message: e.to_string(),
        }
    }

    /// The errno HTCondor's job-queue protocol gives for this refusal.
    pub fn errno(&self) -> i64 {
        match self.status {
            403 => schedd::edit::EACCES,
            404 => schedd::edit::ENOENT,
            400 => schedd::edit::EINVAL,
            // EIO: the schedd could not do it (its store, its thread).
            _ => 5,
        }
    }

    /// The store could not write: nothing was changed.
    fn store(e: store::Error) -> ApiError {
        ApiError {
            status: 500,
            message: format!("the job queue could not be written, so nothing was changed: {e}"),
        }
    }
}

/// The access point's state: the queue in memory and on disk.
pub struct Schedd {
    queue: JobQueue,
    store: Store,
    config: PoolConfig,
    /// The schedd's address, for banners and submit events.
    address: String,
    /// The command port's address, where other hosts reach the schedd
    /// (the submit event's host), once it has one.
    public_address: Option<String>,
    /// Cluster ids handed out and not yet submitted, with whom to.
    reserved: BTreeMap<u32, String>,
    log_format: LogFormat,
    /// Jobs changed since the execute side last looked (see
    /// [`Schedd::take_touched`]).
    touched: Vec<JobId>,
    /// Late materialization's factories, by cluster.
    factories: BTreeMap<u32, Factory>,
}

fn store_id(id: JobId) -> Option<store::JobId> {
    Some(store::JobId::new(
        u32::try_from(id.cluster).ok()?,
        u32::try_from(id.proc).ok()?,
    ))
}

pub(crate) fn literal_int(ad: &ClassAd, name: &str) -> Option<i64> {
    match ad.get(name)? {
        Expr::Lit(Value::Int(i)) => Some(*i),
        _ => None,
    }
}

pub(crate) fn literal_str(ad: &ClassAd, name: &str) -> Option<String> {
    match ad.get(name)? {
        Expr::Lit(Value::Str(s)) => Some(s.to_string()),
        _ => None,
    }
}

pub(crate) fn ad_text(ad: &ClassAd) -> String {
    let mut s = String::new();
    classad::unparse::ad_into(&mut s, ad);
    s
}

/// A job ad as a query answers it: the projection's attributes (all of
/// them without one). Private attributes (a running job's ClaimId: a capability at its
/// execute point) never leave, as HTCondor's schedd keeps them from its
/// clients.
pub(crate) fn project(ad: &ClassAd, projection: &[String]) -> ClassAd {
    if projection.is_empty() {
        let mut out = ad.clone();
        let private: Vec<String> = ad
            .iter()
            .map(|(n, _)| n.as_str().to_string())
            .filter(|n| cedar::ad::is_private(n))
            .collect();
        for n in private {
            out.remove(&n);
        }
        return out;
    }
    let mut out = ClassAd::new();
    for name in projection.iter().filter(|n| !cedar::ad::is_private(n)) {
        if let Some(e) = ad.get(name) {
            out.insert(name.as_str(), e.clone());
        }
    }
    out
}

/// A request's constraint, parsed; a refusal that shows where it fails.
pub(crate) fn parse_constraint(text: Option<&str>) -> Result<Option<Expr>, ApiError> {
    text.map(|t| {
        classad::parse_expr(t).map_err(|e| {
            ApiError::bad_request(format!(
                "the constraint does not parse: {}",
                e.display_with_source("<constraint>")
            ))
        })
    })
    .transpose()
}

/// A [`Selection`] made ready to test jobs with. It owns what it needs,
/// so it can go to the thread that evaluates a query.
pub(crate) struct Selector {
    ids: Vec<JobSpec>,
    owners: Vec<String>,
    constraint: Option<Expr>,
    /// The caller's name when only their jobs count.
    only: Option<String>,
}

impl Selector {
    fn new(sel: &Selection, user: &str, super_user: bool) -> Result<Selector, ApiError> {
        Ok(Selector {
            ids: sel.ids.clone(),
            owners: sel.owners.clone(),
            constraint: parse_constraint(sel.constraint.as_deref())?,
            only: (sel.mine && !super_user).then(|| user.to_string()),
        })
    }

    fn selects(&self, id: (i64, i64), ad: &ClassAd, env: &Env) -> bool {
        let owner = literal_str(ad, attr::OWNER);
        if let Some(me) = &self.only {
            if owner.as_deref() != Some(me.as_str()) {
                return false;
            }
        }
        if !self.owners.is_empty() && !self.owners.iter().any(|o| owner.as_deref() == Some(o)) {
            return false;
        }
        if !self.ids.is_empty()
            && !self.ids.iter().any(|s| {
                i64::from(s.cluster) == id.0 && s.proc.is_none_or(|p| i64::from(p) == id.1)
            })
        {
            return false;
        }
        match &self.constraint {
            None => true,
            Some(c) => match ad.eval(c, env) {
                Value::Bool(b) => b,
                Value::Int(i) => i != 0,
                Value::Real(r) => r != 0.0,
                _ => false,
            },
        }
    }
}

/// How long a query may evaluate: the server gives each request a limit
/// (so that one user's expensive constraint cannot hold up the others),
/// checked between one ad and the next. `Budget::unlimited` is for callers
/// that are not serving a request.
#[derive(Clone, Copy, Debug)]
pub struct Budget {
    until: Option<Instant>,
    limit: Duration,
}

impl Budget {
    /// `limit` from now.
    pub fn new(limit: Duration) -> Budget {
        Budget {
            until: Instant::now().checked_add(limit),
            limit,
        }
    }

    pub fn unlimited() -> Budget {
        Budget {
            until: None,
            limit: Duration::MAX,
        }
    }

    /// When it runs out, if it does.
    pub fn until(&self) -> Option<Instant> {
        self.until
    }

    /// The refusal once it ran out, having looked at `done` (when known)
    /// of `of` ads.
    pub fn exhausted(&self, done: Option<usize>, of: Option<usize>) -> ApiError {
        let progress = match (done, of) {
            (Some(d), Some(n)) => format!("it had looked at {d} of {n} ads by then"),
            (Some(d), None) => format!("it had looked at {d} ads by then"),
            (None, _) => "it was still evaluating one ad then".to_string(),
        };
        ApiError {
            status: 503,
            message: format!(
                "the constraint took too long to evaluate: the pool stops a query after {} \
                 seconds, so that no one query holds up the others ({progress}); narrow it (by \
                 owner or job id) or simplify the constraint",
                self.limit.as_secs()
            ),
        }
    }

    /// An error once the budget has run out, having looked at `done` of
    /// `of` ads.
    pub fn check(&self, done: usize, of: Option<usize>) -> Result<(), ApiError> {
        match self.until {
            Some(t) if Instant::now() >= t => Err(self.exhausted(Some(done), of)),
            _ => Ok(()),
        }
    }
}

/// Ads shown to the caller: ClassAd text, serialized as JSON by the
/// evaluating thread too, so the server's own thread only writes bytes.
pub(crate) fn to_json<T: serde::Serialize>(answer: &T) -> Result<Vec<u8>, ApiError> {
    serde_json::to_vec(answer).map_err(|e| ApiError {
        status: 500,
        message: format!("the answer could not be written: {e}"),
    })
}

/// A job query, taken from the queue under its lock (a snapshot: one
/// reference count per job) and evaluated without it ([`JobsQuery::run`]).
pub struct JobsQuery {
    user: String,
    super_user: bool,
    req: QueryRequest,
    env: Env,
    hello: Hello,
    /// The jobs the query may select (`candidates`).
    jobs: Vec<(JobId, Arc<ClassAd>)>,
    /// The caller's and the queue's totals, from the queue's counters.
    user_totals: Totals,
    all_totals: Totals,
}

impl JobsQuery {
    /// Whether the query is cheap enough to answer on the server's own
    /// thread, sparing the hand-over to a query thread (about 50 µs): it
    /// evaluates nothing a user wrote (no constraint, or a literal one)
    /// and looks at a small queue, or selects nothing in one of moderate
    /// size (the "how many are left" question `-constraint false` asks,
    /// a few microseconds a job).
    pub fn is_cheap(&self) -> bool {
        const FEW: usize = 64;
        const COUNTED: usize = 10_000;
        let literal = match self.req.selection.constraint.as_deref() {
            None => Value::Bool(true),
            Some(t) if t.len() <= 32 => match classad::parse_expr(t) {
                Ok(Expr::Lit(v)) => v,
                _ => return false,
            },
            Some(_) => return false,
        };
        let selects_none = match literal {
            Value::Bool(b) => !b,
            Value::Int(i) => i == 0,
            Value::Real(r) => r == 0.0,
            _ => true,
        };
        self.jobs.len() <= FEW || (selects_none && self.jobs.len() <= COUNTED)
    }

    /// The jobs the query selects, with the caller's and the queue's
    /// totals; refused once `budget` runs out.
    pub fn run(self, budget: &Budget) -> Result<QueryAnswer, ApiError> {
        let projection = self.req.projection.clone();
        let hello = self.hello.clone();
        let (selected, user_totals, all_totals) = self.select(budget)?;
        Ok(QueryAnswer {
            hello,
            ads: selected
                .iter()
                .map(|ad| ad_text(&project(ad, &projection)))
                .collect(),
            user_totals,
            all_totals,
        })
    }

    /// The selected jobs' ads as the queue holds them (shared, not
    /// copied), with the caller's and the queue's totals: for answers that
    /// put ads on the wire themselves.
    pub fn select(self, budget: &Budget) -> Result<(Vec<Arc<ClassAd>>, Totals, Totals), ApiError> {
        let selector = Selector::new(&self.req.selection, &self.user, self.super_user)?;
        let mut selected = Vec::new();
        let of = Some(self.jobs.len());
        for (i, (id, ad)) in self.jobs.into_iter().enumerate() {
            budget.check(i, of)?;
            if selector.selects((id.cluster, id.proc), &ad, &self.env) {
                selected.push(ad);
            }
        }
        Ok((selected, self.user_totals, self.all_totals))
    }
}

/// A history query: read page by page from the store under the queue's
/// lock ([`Schedd::history_page`]), each page parsed and evaluated without
/// it ([`HistoryScan::take`]).
pub struct HistoryScan {
    user: String,
    super_user: bool,
    req: HistoryRequest,
    env: Env,
    store: PathBuf,
    selector: Option<Selector>,
    /// What the store is asked (one id or owner narrows its search).
    query: HistoryQuery,
    /// The store's limit is the request's when nothing else filters.
    plain: bool,
    /// Where the next page starts (the last row's seq).
    before: Option<i64>,
    done: bool,
    looked_at: usize,
    ads: Vec<String>,
}

/// Rows of the history read at once under the lock.
const HISTORY_PAGE: usize = 256;

impl HistoryScan {
    /// Whether more pages are wanted.
    pub fn wants_more(&self) -> bool {
        !self.done
    }

    /// Parses, selects and projects one page; refused once `budget` runs
    /// out.
    pub fn take(&mut self, rows: Vec<HistoryRow>, budget: &Budget) -> Result<(), ApiError> {
        if self.selector.is_none() {
            self.selector = Some(Selector::new(
                &self.req.selection,
                &self.user,
                self.super_user,
            )?);
        }
        let Some(selector) = &self.selector else {
            return Ok(());
        };
        let last_page = rows.len() < HISTORY_PAGE;
        for row in rows {
            budget.check(self.looked_at, None)?;
            if self.req.limit.is_some_and(|n| self.ads.len() >= n) {
                self.done = true;
                return Ok(());
            }
            self.before = Some(row.seq);
            self.looked_at += 1;
            let record = row.parse(&self.store).map_err(|e| ApiError {
                status: 500,
                message: format!("the history could not be read: {e}"),
            })?;
            let id = (i64::from(record.id.cluster), i64::from(record.id.proc));
            if selector.selects(id, &record.ad, &self.env) {
                self.ads
                    .push(ad_text(&project(&record.ad, &self.req.projection)));
            }
        }
        self.done = last_page || self.req.limit.is_some_and(|n| self.ads.len() >= n);
        Ok(())
    }

    pub fn answer(self) -> HistoryAnswer {
        HistoryAnswer { ads: self.ads }
    }
}

/// The jobs an action selects, chosen on a snapshot of the queue without
/// its lock; [`Schedd::act_on`] then acts on them under it.
pub struct ActSelection {
    user: String,
    super_user: bool,
    selection: Selection,
    env: Env,
    jobs: Vec<(JobId, Arc<ClassAd>)>,
}

impl ActSelection {
    /// The jobs selected; refused once `budget` runs out.
    pub fn select(self, budget: &Budget) -> Result<Vec<JobId>, ApiError> {
        let selector = Selector::new(&self.selection, &self.user, self.super_user)?;
        let of = Some(self.jobs.len());
        let mut out = Vec::new();
        for (i, (id, ad)) in self.jobs.iter().enumerate() {
            budget.check(i, of)?;
            if selector.selects((id.cluster, id.proc), ad, &self.env) {
                out.push(*id);
            }
        }
        Ok(out)
    }
}

/// An edit of queued jobs: set `name = value` (`value` in old ClassAd
/// syntax, as HTCondor's tools and protocol carry it) on the jobs
/// `target` names or selects.
#[derive(Clone, Debug)]
pub struct EditRequest {
    pub target: EditTarget,
    pub name: String,
    pub value: String,
}

/// A submission's job ads, parsed (without the queue's lock: parsing a big
/// cluster takes a while) and checked to name their cluster and proc:
/// the cluster ad of what its jobs share and a proc ad per job of what
/// differs (HTCondor's cluster and proc ads), or whole job ads.
#[derive(Debug)]
pub struct ParsedSubmission {
    cluster: u32,
    cluster_ad: Option<ClassAd>,
    ads: Vec<ClassAd>,
}

impl ParsedSubmission {
    /// A cluster's ads already built, whole: ids set by the caller.
    pub fn from_ads(cluster: u32, ads: Vec<ClassAd>) -> ParsedSubmission {
        ParsedSubmission {
            cluster,
            cluster_ad: None,
            ads,
        }
    }

    /// A cluster as the job-queue protocol brings it: its cluster ad
    /// (with `ClusterId`) and one proc ad per job (with its `ProcId`),
    /// holding only what differs from the cluster ad. The queue keeps
    /// them so, each job's proc ad chained to the one cluster ad.
    pub fn from_cluster(
        cluster: u32,
        cluster_ad: ClassAd,
        procs: Vec<ClassAd>,
    ) -> ParsedSubmission {
        ParsedSubmission {
            cluster,
            cluster_ad: Some(cluster_ad),
            ads: procs,
        }
    }

    /// How many jobs the submission makes.
    pub fn len(&self) -> usize {
        self.ads.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ads.is_empty()
    }

    pub fn parse(req: SubmitRequest) -> Result<ParsedSubmission, ApiError> {
        let cluster = req.cluster;
        if req.ads.is_empty() {
            return Err(ApiError::bad_request(format!(
                "cluster {cluster}: a submission needs at least one job"
            )));
        }
        let mut ads = Vec::with_capacity(req.ads.len());
        for (i, text) in req.ads.into_iter().enumerate() {
            let ad = ClassAd::parse(&text).map_err(|e| {
                ApiError::bad_request(format!(
                    "job {cluster}.{i}: the ad does not parse: {}",
                    e.display_with_source("<job ad>")
                ))
            })?;
            let (c, p) = (
                literal_int(&ad, attr::CLUSTER_ID),
                literal_int(&ad, attr::PROC_ID),
            );
            if c != Some(i64::from(cluster)) || p != Some(i as i64) {
                return Err(ApiError::bad_request(format!(
                    "job {cluster}.{i}: its ad must say ClusterId = {cluster} and ProcId = {i}"
                )));
            }
            ads.push(ad);
        }
        // Whole ads, as this API takes them: what they all share becomes
        // the cluster ad, as the job-queue protocol's client sends it.
        let (cluster_ad, procs) = schedd::queue::split_cluster(ads);
        Ok(ParsedSubmission::from_cluster(cluster, cluster_ad, procs))
    }
}

/// A factory cluster as the job-queue protocol brings it (late
/// materialization: SetJobFactory, SendMaterializeData): the cluster ad,
/// the submit digest, its item rows, JobMaterializeLimit.
#[derive(Debug)]
pub struct FactorySubmission {
    pub cluster: u32,
    pub cluster_ad: ClassAd,
    pub digest: String,
    pub items: Vec<String>,
    pub limit: i64,
}

/// The API's totals of jobs counted by status (a job transferring its
/// output counts as running).
pub(crate) fn totals(c: &StatusCounts) -> Totals {
    Totals {
        jobs: c.jobs(),
        idle: c.of(JobStatus::Idle),
        running: c.of(JobStatus::Running) + c.of(JobStatus::TransferringOutput),
        removed: c.of(JobStatus::Removed),
        completed: c.of(JobStatus::Completed),
        held: c.of(JobStatus::Held),
        suspended: c.of(JobStatus::Suspended),
    }
}

/// The jobs `sel` may select, shared as the queue holds them: the procs
/// of the clusters it names; else those its constraint's indexed
/// conjuncts (`ClusterId`, `Owner`, `JobStatus`) leave possible; else all.
/// The [`Selector`] judges each, so the answer is what a scan gives.
fn candidates(queue: &JobQueue, sel: &Selection) -> Vec<(JobId, Arc<ClassAd>)> {
    if !sel.ids.is_empty() {
        let clusters: std::collections::BTreeSet<i64> =
            sel.ids.iter().map(|s| i64::from(s.cluster)).collect();
        return clusters
            .into_iter()
            .flat_map(|c| queue.snapshot_cluster(c))
            .collect();
    }
    match parse_constraint(sel.constraint.as_deref()) {
        Ok(Some(c)) => queue.snapshot_matching(&c),
        Ok(None) => queue.snapshot(),
        // Refused when the selector is made; nothing to look at.
        Err(_) => Vec::new(),
    }
}

impl Schedd {
    /// Opens (or creates) the queue file and restores its jobs.
    pub fn open(
        queue_file: &Path,
        config: PoolConfig,
        address: String,
    ) -> Result<Schedd, store::Error> {
        let store = Store::open(queue_file)?;
        let jobs = store.load_queue()?;
        // The factories go on from where the store has them; their jobs
        // in the queue are chained to their cluster ads as read there.
        let mut factories = BTreeMap::new();
        for (record, cluster_ad) in store.load_factories()? {
            let c = record.cluster;
            let parent = jobs
                .iter()
                .find(|j| j.id.cluster == c)
                .and_then(|j| j.ad.parent().cloned())
                .unwrap_or_else(|| Arc::new(cluster_ad));
            let mut f = Factory::new(
                i64::from(c),
                record.digest,
                record.items,
                i64::from(record.next_proc),
                i64::from(record.total),
                parent,
            );
            f.paused = record.paused;
            factories.insert(c, f);
        }
        let mut queue = JobQueue::restore(
            jobs.into_iter().map(|j| j.ad).collect(),
            i64::from(store.next_cluster_id()),
        );
        queue.utc_offset = config.utc_offset;
        let log_format = LogFormat {
            utc_offset: config.utc_offset,
            ..LogFormat::default()
        };
        let mut schedd = Schedd {
            queue,
            store,
            config,
            address,
            public_address: None,
            reserved: BTreeMap::new(),
            log_format,
            touched: Vec::new(),
            factories,
        };
        // A factory whose jobs left just before a crash makes the next
        // ones now, not at the first periodic pass.
        if !schedd.factories.is_empty() {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs() as i64);
            for note in schedd.materialize(None, now) {
                eprintln!("schedd: {note}");
            }
        }
        Ok(schedd)
    }

    /// Where other hosts reach this schedd: its command port.
    pub fn set_public_address(&mut self, sinful: &str) {
        self.public_address = Some(sinful.to_string());
    }

    /// The schedd's name (SCHEDD_NAME, else the host's).
    pub fn name(&self) -> &str {
        &self.config.schedd_name
    }

    /// Whether `user` is a queue super user (QUEUE_SUPER_USERS).
    pub fn is_super_user(&self, user: &str) -> bool {
        self.config.super_users.contains(user)
    }

    /// A new configuration (`condor_reconfig`).
    pub fn set_config(&mut self, config: PoolConfig) {
        self.queue.utc_offset = config.utc_offset;
        self.log_format.utc_offset = config.utc_offset;
        self.config = config;
    }

    pub fn queue(&self) -> &JobQueue {
        &self.queue
    }

    /// Where the queue's expressions (periodic policy, constraints, submit
    /// requirements) are evaluated: userHome() as HTCondor's schedd
    /// resolves it, unless the configuration turns it off.
    fn env(&self, now: i64) -> Env {
        let env = Env {
            utc_offset: self.config.utc_offset,
            ..Env::at(now)
        };
        if self.config.user_home {
            env.with_user_home(starter::user_home_lookup())
        } else {
            env
        }
    }

    pub fn hello(&self, user: &str) -> Hello {
        Hello {
            user: user.to_string(),
            schedd: self.config.schedd_name.clone(),
            address: self.address.clone(),
            pid: std::process::id(),
            version: env!("CARGO_PKG_VERSION").to_string(),
        }
    }

    /// Whether `cluster` was handed to `user` and not yet submitted.
    fn check_reserved(&self, user: &str, cluster: u32) -> Result<(), ApiError> {
        match self.reserved.get(&cluster) {
            Some(owner) if owner == user => Ok(()),
            Some(_) => Err(ApiError::forbidden(format!(
                "cluster {cluster} was handed to another user"
            ))),
            None => Err(ApiError::bad_request(format!(
                "cluster {cluster} was not handed out by this pool (or was already submitted): \
                 ask for a new cluster first"
            ))),
        }
    }

    /// Hands `user` a cluster id to build a submission with.
    pub fn new_cluster(&mut self, user: &str) -> Result<NewCluster, ApiError> {
        let cluster = self.store.reserve_cluster().map_err(ApiError::store)?;
        // A client that never submits leaves a gap in the ids, as in
        // HTCondor; bound what abandoned reservations can hold.
        if self.reserved.len() >= 10_000 {
            if let Some(first) = self.reserved.keys().next().copied() {
                self.reserved.remove(&first);
            }
        }
        self.reserved.insert(cluster, user.to_string());
        Ok(NewCluster { cluster })
    }

    /// Queues one cluster for `user`; acknowledged once it is on disk.
    pub fn submit(
        &mut self,
        user: &str,
        req: SubmitRequest,
        now: i64,
    ) -> Result<Submitted, ApiError> {
        let parsed = ParsedSubmission::parse(req)?;
        self.submit_parsed(user, parsed, now)
    }

    /// [`Schedd::submit`] of ads already parsed.
    pub fn submit_parsed(
        &mut self,
        user: &str,
        parsed: ParsedSubmission,
        now: i64,
    ) -> Result<Submitted, ApiError> {
        let ParsedSubmission {
            cluster,
            mut cluster_ad,
            mut ads,
        } = parsed;
        self.check_reserved(user, cluster)?;
        // Whose account the job is charged to, as HTCondor's schedd
        // sets it: the peer, not what the ad says (once, in the cluster
        // ad, when there is one).
        let account = format!("{user}@{}", self.config.uid_domain);
        if let Some(c) = &mut cluster_ad {
            c.insert_value(attr::USER, account.as_str());
        }
        for ad in &mut ads {
            if cluster_ad.is_some() {
                ad.remove(attr::USER);
            } else {
                ad.insert_value(attr::USER, account.as_str());
            }
            // The job's name across pools, as HTCondor's schedd gives it
            // in NewProc: `<schedd name>#<cluster>.<proc>#<submit time>`
            // (GLOBAL_JOB_ID_WITH_TIME's default). Clients may not set it.
            let global = format!(
                "{}#{cluster}.{}#{now}",
                self.config.schedd_name,
                literal_int(ad, attr::PROC_ID).unwrap_or(0)
            );
            ad.insert_value("GlobalJobId", global.as_str());
        }
        let mut schedd_ad = ClassAd::new();
        schedd_ad.insert_value("MyType", "Scheduler");
        schedd_ad.insert_value("Name", self.config.schedd_name.as_str());
        let policy = &self.config.submit_policy;
        // The submit event names where other hosts reach the schedd.
        let host = self.public_address.as_deref().unwrap_or(&self.address);
        let done = match cluster_ad {
            Some(c) => self
                .queue
                .submit_cluster(c, ads, user, policy, &schedd_ad, host, now),
            None => self.queue.submit(ads, user, policy, &schedd_ad, host, now),
        }
        .map_err(|e| ApiError::bad_request(format!("submission refused: {e}")))?;
        // The queue's own ads (shared, not copied): chained to one cluster
        // ad, the store writes that once.
        let stored: Vec<Arc<ClassAd>> = done
            .jobs
            .iter()
            .filter_map(|id| self.queue.shared_job(*id))
            .collect();
        if let Err(e) = self.store.submit_shared(cluster, &stored) {
            for id in &done.jobs {
                self.queue.forget(*id);
            }
            return Err(ApiError::store(e));
        }
        drop(stored);
        self.reserved.remove(&cluster);
        self.touched.extend(done.jobs.iter().copied());
        let logs = self.log_entries(&done.changes, now);
        write_logs(logs);
        Ok(Submitted {
            cluster,
            procs: done.jobs.len() as u32,
            warning: done.warning,
        })
    }

    /// Queues a factory cluster (late materialization) for `user`: its
    /// cluster ad (job 0 as the submitter made it), the submit digest and
    /// its item rows, and JobMaterializeLimit; the first jobs are made at
    /// once and stored in the same transaction as the factory.
    pub fn submit_factory(
        &mut self,
        user: &str,
        f: FactorySubmission,
        now: i64,
    ) -> Result<Submitted, ApiError> {
        let FactorySubmission {
            cluster,
            mut cluster_ad,
            digest,
            items,
            limit,
        } = f;
        self.check_reserved(user, cluster)?;
        let account = format!("{user}@{}", self.config.uid_domain);
        let options = submit::SubmitOptions::new(i64::from(cluster), user, now, "/");
        let total = submit::factory_total(
            &digest,
            items.len(),
            &options,
            &self.config.materialize_config,
        )
        .map_err(|e| ApiError::bad_request(format!("cluster {cluster}: the submit digest: {e}")))?;
        if total <= 0 || total > i64::from(i32::MAX) {
            return Err(ApiError::bad_request(format!(
                "cluster {cluster}: the factory would make {total} jobs"
            )));
        }
        cluster_ad.insert_value("ClusterId", i64::from(cluster));
        cluster_ad.remove("ProcId");
        cluster_ad.insert_value(attr::USER, account.as_str());
        cluster_ad.insert_value(schedd::factory::attr::LIMIT, limit.max(1));
        cluster_ad.insert_value(schedd::factory::attr::TOTAL_SUBMIT_PROCS, total);
        if cluster_ad.get(attr::JOB_STATUS).is_none() {
            cluster_ad.insert_value(attr::JOB_STATUS, JobStatus::Idle.number());
        }
        let parent = JobQueue::factory_cluster_ad(cluster_ad, user, now);
        let mut factory = Factory::new(
            i64::from(cluster),
            digest,
            items,
            0,
            total,
            Arc::clone(&parent),
        );
        let (procs, submitted) = self
            .materialize_some(&mut factory, now)
            .map_err(ApiError::bad_request)?;
        let record = FactoryRecord {
            cluster,
            digest: factory.digest.clone(),
            items: factory.items.to_vec(),
            next_proc: factory.next_proc as u32,
            total: total as u32,
            paused: false,
        };
        if let Err(e) = self.store.submit_factory(&parent, &record, &procs) {
            for id in submitted.iter().flat_map(|s| s.jobs.iter()) {
                self.queue.forget(*id);
            }
            return Err(ApiError::store(e));
        }
        self.reserved.remove(&cluster);
        self.factories.insert(cluster, factory);
        let mut warning = None;
        if let Some(done) = submitted {
            self.touched.extend(done.jobs.iter().copied());
            let logs = self.log_entries(&done.changes, now);
            write_logs(logs);
            warning = done.warning;
        }
        Ok(Submitted {
            cluster,
            procs: procs.len() as u32,
            warning,
        })
    }

    /// Makes the jobs `factory` is due to make now and queues them in
    /// memory (the caller stores them): their shared ads, and what the
    /// queue said.
    fn materialize_some(
        &mut self,
        factory: &mut Factory,
        now: i64,
    ) -> Result<(Vec<Arc<ClassAd>>, Option<schedd::Submitted>), String> {
        // Kept by the queue as its jobs change: no scan of the cluster
        // at each departure.
        let counts = self.queue.cluster_counts(factory.cluster);
        let gone = counts.of(JobStatus::Completed) + counts.of(JobStatus::Removed);
        let present = (counts.jobs() - gone) as i64;
        let due = factory
            .due(&counts)
            .min(self.config.max_materialized_per_cluster - present)
            .max(0);
        if due == 0 {
            return Ok((Vec::new(), None));
        }
        let first = factory.next_proc;
        let mut procs = Vec::with_capacity(due as usize);
        for _ in 0..due {
            let mut ad = match factory.make(&self.config.materialize_config) {
                Ok(ad) => ad,
                Err(e) => {
                    factory.next_proc = first;
                    return Err(e.to_string());
                }
            };
            let proc = literal_int(&ad, attr::PROC_ID).unwrap_or(0);
            let global = format!(
                "{}#{}.{proc}#{now}",
                self.config.schedd_name, factory.cluster
            );
            ad.insert_value("GlobalJobId", global.as_str());
            procs.push(ad);
        }
        let owner = match factory.cluster_ad.get(attr::OWNER) {
            Some(Expr::Lit(Value::Str(s))) => s.to_string(),
            _ => String::new(),
        };
        let mut schedd_ad = ClassAd::new();
        schedd_ad.insert_value("MyType", "Scheduler");
        schedd_ad.insert_value("Name", self.config.schedd_name.as_str());
        let host = self.public_address.as_deref().unwrap_or(&self.address);
        let done = self
            .queue
            .materialize(
                Arc::clone(&factory.cluster_ad),
                procs,
                &owner,
                &self.config.submit_policy,
                &schedd_ad,
                host,
                now,
            )
            .map_err(|e| {
                factory.next_proc = first;
                format!(
                    "cluster {}: materializing jobs: refused: {e}",
                    factory.cluster
                )
            })?;
        let stored = done
            .jobs
            .iter()
            .filter_map(|id| self.queue.shared_job(*id))
            .collect();
        Ok((stored, Some(done)))
    }

    /// Late materialization's pass over the factories of `clusters` (all
    /// when `None`): each makes the jobs it is due to (stored with its
    /// next ProcId in one transaction); one that has made every job and
    /// has none left ends. Notes for the log come back.
    pub fn materialize(&mut self, clusters: Option<&[u32]>, now: i64) -> Vec<String> {
        let mut notes = Vec::new();
        let which: Vec<u32> = match clusters {
            Some(c) => c
                .iter()
                .copied()
                .filter(|c| self.factories.contains_key(c))
                .collect(),
            None => self.factories.keys().copied().collect(),
        };
        for c in which {
            let Some(mut factory) = self.factories.remove(&c) else {
                continue;
            };
            let before = factory.next_proc;
            match self.materialize_some(&mut factory, now) {
                Ok((procs, Some(done))) => {
                    match self.store.materialize(c, &procs, factory.next_proc as u32) {
                        Ok(()) => {
                            self.touched.extend(done.jobs.iter().copied());
                            let logs = self.log_entries(&done.changes, now);
                            write_logs(logs);
                        }
                        Err(e) => {
                            for id in &done.jobs {
                                self.queue.forget(*id);
                            }
                            factory.next_proc = before;
                            notes.push(format!(
                                "cluster {c}: materialized jobs could not be stored: {e}"
                            ));
                        }
                    }
                }
                Ok((_, None)) => {}
                // Said once: the factory stops until the schedd starts
                // again (or the cluster is removed).
                Err(e) => {
                    notes.push(format!("{e}; the factory is stopped"));
                    factory.error = Some(e);
                }
            }
            if factory.exhausted() && self.queue.cluster_jobs(i64::from(c)).next().is_none() {
                // Every job made and gone: the cluster ends.
                if let Err(e) = self.store.remove_factory(c) {
                    notes.push(format!("cluster {c}: ending the factory: {e}"));
                } else {
                    continue;
                }
            }
            self.factories.insert(c, factory);
        }
        notes
    }

    /// The factories' cluster ads as condor_q -factory shows them: the
    /// cluster ad with its jobs' counts (JobsPresent, JobsIdle,
    /// JobsRunning, JobsHeld), JobMaterializeNextProcId, the digest's
    /// name and whether it is paused.
    pub fn factory_ads(&self) -> Vec<ClassAd> {
        self.factories
            .values()
            .map(|f| {
                let mut ad = (*f.cluster_ad).clone();
                let counts = self.queue.cluster_counts(f.cluster);
                let n = |s: JobStatus| counts.of(s) as i64;
                let present =
                    counts.jobs() as i64 - n(JobStatus::Completed) - n(JobStatus::Removed);
                ad.insert_value("JobsPresent", present);
                ad.insert_value("JobsIdle", n(JobStatus::Idle));
                ad.insert_value(
                    "JobsRunning",
                    n(JobStatus::Running) + n(JobStatus::TransferringOutput),
                );
                ad.insert_value("JobsHeld", n(JobStatus::Held));
                ad.insert_value(schedd::factory::attr::NEXT_PROC_ID, f.next_proc);
                ad.insert_value(
                    schedd::factory::attr::DIGEST_FILE,
                    format!("condor_submit.{}.digest", f.cluster).as_str(),
                );
                if !f.items.is_empty() {
                    ad.insert_value(
                        schedd::factory::attr::ITEMS_FILE,
                        format!("condor_submit.{}.items", f.cluster).as_str(),
                    );
                }
                match &f.error {
                    Some(why) => {
                        ad.insert_value(schedd::factory::attr::PAUSED, -1i64);
                        ad.insert_value("JobMaterializePauseReason", why.as_str());
                    }
                    None => ad.insert_value(schedd::factory::attr::PAUSED, i64::from(f.paused())),
                }
                ad
            })
            .collect()
    }

    /// [`Schedd::factory_ads`] that `constraint` holds for (a query that
    /// asks for cluster ads: condor_q -factory).
    pub fn factory_ads_matching(
        &self,
        user: &str,
        constraint: Option<&str>,
        now: i64,
    ) -> Result<Vec<ClassAd>, ApiError> {
        let selection = Selection {
            constraint: constraint.map(str::to_string),
            ..Selection::default()
        };
        let selector = Selector::new(&selection, user, self.is_super_user(user))?;
        let env = self.env(now);
        Ok(self
            .factory_ads()
            .into_iter()
            .filter(|ad| {
                let c = literal_int(ad, attr::CLUSTER_ID).unwrap_or(0);
                selector.selects((c, -1), ad, &env)
            })
            .collect())
    }

    /// `rm`, `hold`, `release` of a factory's cluster (the selection
    /// takes the cluster ad itself, as `condor_rm 5` or a constraint
    /// that holds for it does): removal ends the factory, hold pauses it,
    /// release resumes it (HTCondor's JobMaterializePaused). Only its
    /// owner or a queue super user may.
    fn act_on_factories(&mut self, user: &str, req: &ActRequest, now: i64) -> Vec<String> {
        let mut done = Vec::new();
        let Ok(selector) = Selector::new(&req.selection, user, self.is_super_user(user)) else {
            return done;
        };
        let env = self.env(now);
        let super_user = self.is_super_user(user);
        let chosen: Vec<u32> = self
            .factories
            .iter()
            .filter(|(c, f)| {
                let owner = match f.cluster_ad.get(attr::OWNER) {
                    Some(Expr::Lit(Value::Str(s))) => s.to_string(),
                    _ => String::new(),
                };
                (super_user || owner == user)
                    && selector.selects((i64::from(**c), -1), &f.cluster_ad, &env)
            })
            .map(|(c, _)| *c)
            .collect();
        for c in chosen {
            let outcome = match req.action {
                Action::Remove => self.store.remove_factory(c).map(|()| {
                    self.factories.remove(&c);
                }),
                Action::Hold | Action::Release => {
                    let pause = req.action == Action::Hold;
                    self.store.pause_factory(c, pause).map(|()| {
                        if let Some(f) = self.factories.get_mut(&c) {
                            f.paused = pause;
                        }
                    })
                }
                _ => Ok(()),
            };
            if outcome.is_ok() {
                done.push(format!("{c}"));
            }
        }
        done
    }

    /// The jobs `req` selects, with the caller's and the queue's totals.
    pub fn query(&self, user: &str, req: &QueryRequest, now: i64) -> Result<QueryAnswer, ApiError> {
        self.query_snapshot(user, req.clone(), now)
            .run(&Budget::unlimited())
    }

    /// What [`JobsQuery::run`] needs, taken now: the queue's snapshot.
    pub fn query_snapshot(&self, user: &str, req: QueryRequest, now: i64) -> JobsQuery {
        JobsQuery {
            user: user.to_string(),
            super_user: self.config.super_users.contains(user),
            env: self.env(now),
            hello: self.hello(user),
            jobs: candidates(&self.queue, &req.selection),
            user_totals: totals(&self.queue.owner_counts(user)),
            all_totals: totals(&self.queue.counts()),
            req,
        }
    }

    /// The counts a summary-only job query answers, from the queue's
    /// counters when they alone know them (the constraint's conjuncts name
    /// only `Owner` and statuses): the jobs `constraint` selects, the
    /// caller's and the queue's. `None`: the jobs must be evaluated.
    pub fn query_counts(
        &self,
        user: &str,
        constraint: Option<&str>,
    ) -> Option<(StatusCounts, Totals, Totals)> {
        let selected = match parse_constraint(constraint).ok()? {
            Some(c) => self.queue.count_matching(&c)?,
            None => self.queue.counts(),
        };
        Some((
            selected,
            totals(&self.queue.owner_counts(user)),
            totals(&self.queue.counts()),
        ))
    }

    /// Holds, releases or removes the jobs `req` selects, as `user`.
    pub fn act(&mut self, user: &str, req: &ActRequest, now: i64) -> Result<ActAnswer, ApiError> {
        let targets = self
            .act_snapshot(user, req, now)
            .select(&Budget::unlimited())?;
        self.act_on(user, req, targets, now)
    }

    /// What [`ActSelection::select`] needs, taken now: the queue's
    /// snapshot.
    pub fn act_snapshot(&self, user: &str, req: &ActRequest, now: i64) -> ActSelection {
        ActSelection {
            user: user.to_string(),
            super_user: self.config.super_users.contains(user),
            selection: req.selection.clone(),
            env: self.env(now),
            jobs: candidates(&self.queue, &req.selection),
        }
    }

    /// Acts on `targets`, the jobs the request selected when it was read
    /// (those gone since are passed over; whether `user` may act on each,
    /// and whether its status allows it, is decided now).
    pub fn act_on(
        &mut self,
        user: &str,
        req: &ActRequest,
        targets: Vec<JobId>,
        now: i64,
    ) -> Result<ActAnswer, ApiError> {
        if matches!(req.action, Action::Vacate | Action::VacateFast) {
            return Ok(self.may_vacate(user, req.action, targets));
        }
        // Each job's ad before the action, to undo it if the store
        // refuses: the queue's shared ad itself (the action edits a copy),
        // in a list, as a removal of a 100,000-job cluster makes one.
        let mut before: Vec<(JobId, Arc<ClassAd>)> = Vec::with_capacity(targets.len());
        let mut changes = Vec::with_capacity(targets.len());
        let mut failed = Vec::new();
        for id in targets {
            let Some(pre) = self.queue.shared_job(id) else {
                continue;
            };
            let action = match req.action {
                Action::Hold => UserAction::Hold {
                    reason: req.reason.clone(),
                    subcode: 0,
                },
                Action::Release => UserAction::Release {
                    reason: req.reason.clone(),
                },
                Action::Remove => UserAction::Remove {
                    reason: req.reason.clone(),
                },
                Action::Vacate | Action::VacateFast => unreachable!("answered above"),
            };
            match self
                .queue
                .user_action(user, &self.config.super_users, id, action, now)
            {
                Ok(c) => {
                    before.push((id, pre));
                    changes.push(c);
                }
                Err(e) => failed.push(Failure {
                    job: id.to_string(),
                    error: e.to_string(),
                    code: action_result(&e, req.action),
                }),
            }
        }
        // A factory goes (rm) or pauses (hold) before its jobs' changes
        // are stored, so that it makes no job to replace them.
        let factories = if self.factories.is_empty() {
            Vec::new()
        } else {
            self.act_on_factories(user, req, now)
        };
        if let Err(e) = self.persist(&changes, now) {
            self.undo(
                before
                    .into_iter()
                    .map(|(id, ad)| (id, Arc::unwrap_or_clone(ad)))
                    .collect(),
            );
            return Err(ApiError::store(e));
        }
        if req.action == Action::Release && !factories.is_empty() {
            let clusters: Vec<u32> = factories.iter().filter_map(|c| c.parse().ok()).collect();
            for note in self.materialize(Some(&clusters), now) {
                eprintln!("schedd: {note}");
            }
        }
        let mut done: Vec<String> = changes.iter().map(|c| c.job.to_string()).collect();
        // A factory acted on with none of its jobs in the queue (all left,
        // or paused before it made the next) was still acted on: its
        // cluster ad counts, as `C.-1`.
        for c in &factories {
            let cluster = c.parse::<i64>().unwrap_or(-1);
            if !changes.iter().any(|ch| ch.job.cluster == cluster) {
                done.push(format!("{c}.-1"));
            }
        }
        Ok(ActAnswer { done, failed })
    }

    /// condor_vacate_job's checks: which of `targets` `user` may vacate
    /// (the owner or a queue super user) and that run (running or
    /// suspended: HTCondor vacates nothing else). The queue does not
    /// change here: the claim core asks each job's machine to evict it
    /// (`ScheddRole::act_on`), and the starter's report makes it idle.
    fn may_vacate(&self, user: &str, action: Action, targets: Vec<JobId>) -> ActAnswer {
        use schedd::queue::QueueError;
        let mut answer = ActAnswer {
            done: Vec::new(),
            failed: Vec::new(),
        };
        for id in targets {
            let Some(ad) = self.queue.job(id) else {
                continue;
            };
            let status = self.queue.status(id).unwrap_or(JobStatus::Idle);
            let running = match status {
                JobStatus::Running | JobStatus::Suspended => Ok(()),
                _ => Err(QueueError::WrongStatus {
                    job: id,
                    status,
                    event: "vacated",
                }),
            };
            let refused = schedd::authz::may_act(user, id, ad, &self.config.super_users, "vacate")
                .map_err(QueueError::NotPermitted)
                .and(running);
            match refused {
                Ok(()) => answer.done.push(id.to_string()),
                Err(e) => answer.failed.push(Failure {
                    job: id.to_string(),
                    error: e.to_string(),
                    code: action_result(&e, action),
                }),
            }
        }
        answer
    }

    /// Decides an edit of queued jobs as `user` without making it: the
    /// jobs it would change and how many it matched, or why it is refused
    /// (HTCondor's rules: `schedd::edit`).
    pub fn check_edit(
        &self,
        user: &str,
        req: &EditRequest,
        now: i64,
    ) -> Result<EditPlan, ApiError> {
        let (queue_req, factories) = self.factory_edit_targets(req);
        let mut value = None;
        for c in &factories {
            value = self.check_factory_edit(user, *c, req)?.or(value);
        }
        match queue_req {
            Some(r) => self
                .queue
                .check_edit(
                    &r.target,
                    &r.name,
                    &r.value,
                    user,
                    self.is_super_user(user),
                    &self.config.edit_rules,
                    now,
                )
                .map_err(ApiError::edit),
            None => Ok(EditPlan {
                jobs: Vec::new(),
                matched: factories.len(),
                name: req.name.clone(),
                value: value.unwrap_or(Expr::Lit(Value::Undefined)),
            }),
        }
    }

    /// An edit split into the part for the jobs in the queue (none when it
    /// names only factory clusters none of whose jobs is present) and the
    /// factory clusters whose cluster ad it sets (`C.-1` of a factory: as
    /// HTCondor's schedd, the jobs made later are made with it).
    fn factory_edit_targets(&self, req: &EditRequest) -> (Option<EditRequest>, Vec<u32>) {
        let EditTarget::Jobs(ids) = &req.target else {
            return (Some(req.clone()), Vec::new());
        };
        let factories: Vec<u32> = ids
            .iter()
            .filter(|id| id.proc < 0)
            .filter_map(|id| u32::try_from(id.cluster).ok())
            .filter(|c| self.factories.contains_key(c))
            .collect();
        if factories.is_empty() {
            return (Some(req.clone()), Vec::new());
        }
        let rest: Vec<JobId> = ids
            .iter()
            .copied()
            .filter(|id| {
                id.proc >= 0
                    || !u32::try_from(id.cluster).is_ok_and(|c| self.factories.contains_key(&c))
                    || self.queue.cluster_jobs(id.cluster).next().is_some()
            })
            .collect();
        let queue_req = (!rest.is_empty()).then(|| EditRequest {
            target: EditTarget::Jobs(rest),
            name: req.name.clone(),
            value: req.value.clone(),
        });
        (queue_req, factories)
    }

    /// Whether `user` may set `req`'s attribute in factory `cluster`'s
    /// cluster ad: the value to set (`None`: a secure attribute, quietly
    /// left alone).
    fn check_factory_edit(
        &self,
        user: &str,
        cluster: u32,
        req: &EditRequest,
    ) -> Result<Option<Expr>, ApiError> {
        let Some(f) = self.factories.get(&cluster) else {
            return Ok(None);
        };
        self.queue
            .check_cluster_ad_edit(
                i64::from(cluster),
                &f.cluster_ad,
                &req.name,
                &req.value,
                user,
                self.is_super_user(user),
                &self.config.edit_rules,
            )
            .map_err(ApiError::edit)
    }

    /// The factory clusters whose cluster ad `constraint` is true of
    /// (condor_qedit's edit of whole clusters, SetAttributeByConstraint
    /// with PostSubmitClusterChange, sets their cluster ads too).
    pub fn factory_clusters_matching(&self, constraint: &Expr, now: i64) -> Vec<u32> {
        let env = self.env(now);
        self.factories
            .values()
            .filter(|f| matches!(f.cluster_ad.eval(constraint, &env), Value::Bool(true)))
            .filter_map(|f| u32::try_from(f.cluster).ok())
            .collect()
    }

    /// Edits queued jobs as `user` (`condor_qedit`, `Schedd.edit`): sets
    /// `req.name = req.value` on the jobs `req.target` names or selects,
    /// all of them or, when one is refused, none; acknowledged once it is
    /// on disk. Returns what it decided (the jobs changed, how many it
    /// matched).
    pub fn edit(&mut self, user: &str, req: &EditRequest, now: i64) -> Result<EditPlan, ApiError> {
        let mut plans = self.edit_all(user, std::slice::from_ref(req), now)?;
        Ok(plans.remove(0))
    }

    /// Several edits as one transaction (a job-queue connection's edits,
    /// at its commit): each sees the ones before it; all are stored in one
    /// transaction of the store, or, when one is refused or the store
    /// fails, none is made.
    pub fn edit_all(
        &mut self,
        user: &str,
        reqs: &[EditRequest],
        now: i64,
    ) -> Result<Vec<EditPlan>, ApiError> {
        let super_user = self.is_super_user(user);
        let mut before: BTreeMap<JobId, ClassAd> = BTreeMap::new();
        let mut plans = Vec::with_capacity(reqs.len());
        let mut changes = Vec::new();
        // Factory cluster ads to set, after the jobs' changes are stored.
        let mut cluster_edits: Vec<(u32, String, Expr)> = Vec::new();
        for req in reqs {
            let (queue_req, factories) = self.factory_edit_targets(req);
            for c in &factories {
                match self.check_factory_edit(user, *c, req) {
                    Ok(Some(v)) => cluster_edits.push((*c, req.name.clone(), v)),
                    Ok(None) => {}
                    Err(e) => {
                        self.undo(before);
                        return Err(e);
                    }
                }
            }
            let checked = match &queue_req {
                Some(r) => self.queue.check_edit(
                    &r.target,
                    &r.name,
                    &r.value,
                    user,
                    super_user,
                    &self.config.edit_rules,
                    now,
                ),
                None => Ok(EditPlan {
                    jobs: Vec::new(),
                    matched: factories.len(),
                    name: req.name.clone(),
                    value: Expr::Lit(Value::Undefined),
                }),
            };
            let plan = match checked {
                Ok(p) => p,
                Err(e) => {
                    self.undo(before);
                    return Err(ApiError::edit(e));
                }
            };
            for id in &plan.jobs {
                if !before.contains_key(id) {
                    if let Some(ad) = self.queue.job(*id) {
                        before.insert(*id, ad.clone());
                    }
                }
            }
            changes.extend(self.queue.apply_plan(&plan));
            plans.push(plan);
        }
        let mut ops = Vec::new();
        for c in &changes {
            let (Some(id), Some(ad)) = (store_id(c.job), self.queue.job(c.job)) else {
                continue;
            };
            for name in &c.attributes {
                if let Some(e) = ad.get(name) {
                    ops.push(Op::set(id, name, e.clone()));
                }
            }
        }
        // Factories' cluster ads as the edit leaves them, stored with the
        // jobs' changes in one transaction.
        let (cluster_ads, cluster_attrs) = self.edited_factory_cluster_ads(cluster_edits);
        if !ops.is_empty() || !cluster_attrs.is_empty() {
            if let Err(e) = self.store.apply_with_cluster_attrs(&ops, &cluster_attrs) {
                self.undo(before);
                return Err(ApiError::store(e));
            }
        }
        // What the scheduling reads (Requirements, Rank, Request*,
        // JobPrio) may have changed: the claim core looks again.
        self.touched.extend(changes.iter().map(|c| c.job));
        if !cluster_ads.is_empty() {
            let clusters: Vec<u32> = cluster_ads.iter().map(|(c, _)| *c).collect();
            for (c, ad) in cluster_ads {
                if let Some(f) = self.factories.get_mut(&c) {
                    f.cluster_ad = Arc::new(ad);
                }
            }
            // A factory whose limits were edited may be due to make jobs.
            for note in self.materialize(Some(&clusters), now) {
                eprintln!("schedd: {note}");
            }
        }
        Ok(plans)
    }

    /// The cluster ads of the factories `edits` set attributes of, as
    /// they will be, and the attributes to store: the edited ones, and
    /// EditedClusterAttrs naming them, so that the jobs made from now on
    /// read the cluster ad's value, not the digest's (HTCondor's
    /// `AddClusterEditedAttributes` and `NewProcFromAd`, `qmgmt.cpp`).
    #[allow(clippy::type_complexity)]
    fn edited_factory_cluster_ads(
        &self,
        edits: Vec<(u32, String, Expr)>,
    ) -> (Vec<(u32, ClassAd)>, Vec<(u32, String, Expr)>) {
        let mut by_cluster: BTreeMap<u32, Vec<(String, Expr)>> = BTreeMap::new();
        for (c, name, value) in edits {
            by_cluster.entry(c).or_default().push((name, value));
        }
        let edited_name = schedd::factory::attr::EDITED_CLUSTER_ATTRS;
        let mut ads = Vec::new();
        let mut stored = Vec::new();
        for (c, mut attrs) in by_cluster {
            let Some(f) = self.factories.get(&c) else {
                continue;
            };
            let mut ad = (*f.cluster_ad).clone();
            // An edit of EditedClusterAttrs itself wins, as in HTCondor.
            if !attrs
                .iter()
                .any(|(n, _)| n.eq_ignore_ascii_case(edited_name))
            {
                let names: Vec<String> = attrs.iter().map(|(n, _)| n.clone()).collect();
                let list =
                    schedd::factory::with_edited(&schedd::factory::edited_attrs(&ad), &names);
                attrs.push((edited_name.to_string(), Expr::Lit(Value::Str(list.into()))));
            }
            for (n, e) in attrs {
                ad.insert(n.as_str(), e.clone());
                stored.push((c, n, e));
            }
            ads.push((c, ad));
        }
        (ads, stored)
    }

    /// Jobs that have left the queue, newest first.
    pub fn history(
        &self,
        user: &str,
        req: &HistoryRequest,
        now: i64,
    ) -> Result<HistoryAnswer, ApiError> {
        let mut scan = self.history_scan(user, req.clone(), now);
        while scan.wants_more() {
            let rows = self.history_page(&scan)?;
            scan.take(rows, &Budget::unlimited())?;
        }
        Ok(scan.answer())
    }

    /// A history query, to read with [`Schedd::history_page`] and
    /// [`HistoryScan::take`].
    pub fn history_scan(&self, user: &str, req: HistoryRequest, now: i64) -> HistoryScan {
        let super_user = self.config.super_users.contains(user);
        let mut query = HistoryQuery::default();
        // One id narrows the store's search; anything more is filtered here.
        if let [one] = req.selection.ids.as_slice() {
            query.cluster = Some(one.cluster);
            query.proc = one.proc;
        }
        if let [owner] = req.selection.owners.as_slice() {
            query.owner = Some(owner.clone());
        }
        // So does a constraint's `Owner == "x"` (by the store's index by
        // owner): a rare owner's records are found without parsing every
        // record. The constraint is still evaluated on each.
        if let Ok(Some(c)) = parse_constraint(req.selection.constraint.as_deref()) {
            query = query.narrowed_by(&c);
        }
        let plain = req.selection.constraint.is_none()
            && req.selection.ids.len() <= 1
            && req.selection.owners.len() <= 1
            && (!req.selection.mine || super_user);
        HistoryScan {
            user: user.to_string(),
            super_user,
            env: self.env(now),
            store: self.store.path().to_path_buf(),
            selector: None,
            query,
            plain,
            before: None,
            done: req.limit == Some(0),
            looked_at: 0,
            ads: Vec::new(),
            req,
        }
    }

    /// The next page of the history for `scan`, as stored.
    pub fn history_page(&self, scan: &HistoryScan) -> Result<Vec<HistoryRow>, ApiError> {
        let mut q = scan.query.clone();
        if scan.plain {
            q.limit = scan.req.limit.map(|n| n.saturating_sub(scan.ads.len()));
        }
        self.store
            .history_page(&q, scan.before, HISTORY_PAGE)
            .map_err(|e| ApiError {
                status: 500,
                message: format!("the history could not be read: {e}"),
            })
    }

    /// One evaluation of periodic job policy (and SYSTEM_PERIODIC_*),
    /// after a checkpoint of the store. Returns how many jobs it changed.
    pub fn periodic(&mut self, now: i64) -> Result<usize, String> {
        // The store's log is copied into its file now, while no request
        // waits for it (see `Store::checkpoint`); a failure here loses
        // nothing (the log holds it) and the next pass tries again.
        if let Err(e) = self.store.checkpoint() {
            eprintln!("schedd: {e}");
        }
        let before = self.queue.clone();
        let changes = self
            .queue
            .evaluate_periodic(now, &self.config.system_policy);
        // Factories make what they are due (also the ones a restart
        // left short).
        let notes = self.materialize(None, now);
        if changes.is_empty() {
            return if notes.is_empty() {
                Ok(0)
            } else {
                Err(notes.join("; "))
            };
        }
        if let Err(e) = self.persist(&changes, now) {
            self.queue = before;
            return Err(format!("periodic job policy: the job queue could not be written, so nothing was changed: {e}"));
        }
        Ok(changes.len())
    }

    /// The jobs whose status may have changed since the last call (the
    /// execute side keeps its list of idle jobs, and stops the runs of jobs
    /// held or removed, by it).
    pub fn take_touched(&mut self) -> Vec<JobId> {
        std::mem::take(&mut self.touched)
    }

    /// Something happened to a job on its machine (it started, was
    /// suspended, exited, was evicted, could not start): the queue decides
    /// what that means, the store keeps it, the event log says it.
    pub fn job_event(
        &mut self,
        id: JobId,
        event: schedd::JobEvent,
        now: i64,
    ) -> Result<Change, String> {
        let before = self
            .queue
            .job(id)
            .cloned()
            .ok_or_else(|| format!("job {id} is not in the queue"))?;
        let change = self
            .queue
            .apply(id, event, now, &self.config.system_policy)
            .map_err(|e| e.to_string())?;
        // What happened on a machine is stored without waiting for the
        // disk (see `Store::apply_unsynced`): a crash of the process loses
        // none of it, and nothing here was promised to a client.
        if let Err(e) = self.persist_with(std::slice::from_ref(&change), now, false) {
            self.undo(BTreeMap::from([(id, before)]));
            return Err(format!(
                "job {id}: the job queue could not be written, so nothing was changed: {e}"
            ));
        }
        Ok(change)
    }

    /// The run of a job that was removed (or completed) while it ran is
    /// over: the job leaves the queue for the history now.
    pub fn run_ended(&mut self, id: JobId, now: i64) -> Result<(), String> {
        let leaving = matches!(
            self.queue.status(id),
            Some(JobStatus::Removed | JobStatus::Completed)
        );
        let Some(sid) = store_id(id).filter(|_| leaving) else {
            return Ok(());
        };
        self.store
            .apply_unsynced(&[Op::to_history(sid, now)])
            .map_err(|e| format!("job {id}: could not be moved to the history: {e}"))?;
        self.queue.forget(id);
        if let Ok(c) = u32::try_from(id.cluster) {
            if self.factories.contains_key(&c) {
                for note in self.materialize(Some(&[c]), now) {
                    eprintln!("schedd: {note}");
                }
            }
        }
        Ok(())
    }

    /// Commits `changes` (already made in memory) to the store in one
    /// transaction; jobs that reached Removed or Completed go to the
    /// history. Writes the job event log once the store has them.
    fn persist(&mut self, changes: &[Change], now: i64) -> Result<(), store::Error> {
        self.persist_with(changes, now, true)
    }

    /// [`Schedd::persist`], waiting for the disk (`synced`) or not.
    fn persist_with(
        &mut self,
        changes: &[Change],
        now: i64,
        synced: bool,
    ) -> Result<(), store::Error> {
        if changes.is_empty() {
            return Ok(());
        }
        // Sized once: a removal of a big cluster makes millions of ops.
        let mut ops = Vec::with_capacity(
            changes
                .iter()
                .map(|c| c.attributes.len() + 1)
                .sum::<usize>(),
        );
        let mut leaving = Vec::new();
        self.touched.extend(changes.iter().map(|c| c.job));
        for c in changes {
            let Some(id) = store_id(c.job) else {
                continue;
            };
            // A job still on a machine leaves once its run is over
            // (`run_ended`).
            let leaves = matches!(c.to, JobStatus::Removed | JobStatus::Completed) && !c.stop;
            if leaves {
                // Its history ad is its ad as it is now: the store writes
                // it from the queue's (shared, not copied), rather than
                // storing the change and reading the job back.
                if let Some(ad) = self.queue.shared_job(c.job) {
                    ops.push(Op::to_history_as(id, now, ad));
                    leaving.push(c.job);
                    continue;
                }
            }
            let ad = self.queue.job(c.job);
            for name in &c.attributes {
                match ad.and_then(|ad| ad.get(name)) {
                    Some(e) => ops.push(Op::set(id, name, e.clone())),
                    None => ops.push(Op::delete(id, name)),
                }
            }
            if leaves {
                ops.push(Op::to_history(id, now));
                leaving.push(c.job);
            }
        }
        let logs = self.log_entries(changes, now);
        if ops.is_empty() && leaving.is_empty() {
            write_logs(logs);
            return Ok(());
        }
        if synced {
            self.store.apply(&ops)?;
        } else {
            self.store.apply_unsynced(&ops)?;
        }
        for id in leaving {
            self.queue.forget(id);
        }
        write_logs(logs);
        self.materialize_after(changes, now);
        Ok(())
    }

    /// Factories whose jobs changed (left, started, were held) may be
    /// due to make more: as HTCondor's schedd, at once.
    fn materialize_after(&mut self, changes: &[Change], now: i64) {
        if self.factories.is_empty() {
            return;
        }
        let mut clusters: Vec<u32> = changes
            .iter()
            .filter_map(|c| u32::try_from(c.job.cluster).ok())
            .filter(|c| self.factories.contains_key(c))
            .collect();
        clusters.sort_unstable();
        clusters.dedup();
        if !clusters.is_empty() {
            for note in self.materialize(Some(&clusters), now) {
                eprintln!("schedd: {note}");
            }
        }
    }

    /// Puts the jobs in `before` back as they were (after the store refused
    /// their change).
    fn undo(&mut self, before: BTreeMap<JobId, ClassAd>) {
        if before.is_empty() {
            return;
        }
        let jobs: Vec<ClassAd> = self
            .queue
            .jobs()
            .map(|(id, ad)| before.get(&id).unwrap_or(ad).clone())
            .chain(
                // Jobs forgotten in the meantime (none today) come back too.
                before
                    .iter()
                    .filter(|(id, _)| self.queue.job(**id).is_none())
                    .map(|(_, ad)| ad.clone()),
            )
            .collect();
        let mut q = JobQueue::restore(jobs, self.queue.next_cluster());
        q.utc_offset = self.queue.utc_offset;
        self.queue = q;
    }

    /// The event log text of each change, with the file it goes to (the
    /// job's `UserLog`).
    fn log_entries(&self, changes: &[Change], now: i64) -> Vec<(String, PathBuf, String)> {
        changes
            .iter()
            .filter_map(|c| {
                let event = c.log.as_ref()?;
                let job = self.queue.job(c.job)?;
                let path = literal_str(job, "UserLog")?;
                let owner = literal_str(job, attr::OWNER)?;
                Some((
                    owner,
                    PathBuf::from(path),
                    event.format(c.job, now, &self.log_format),
                ))
            })
            .collect()
    }
}

/// Appends each entry to its owner's log, through a descriptor the owner
/// opened (`event_logs`). A log that cannot be written does not undo the
/// change (it is on disk); the daemon says so on its stderr.
fn write_logs(entries: Vec<(String, PathBuf, String)>) {
    for problem in crate::event_logs::write(entries) {
        eprintln!("ferrocondor: {problem}");
    }
}

/// HTCondor's action result (`action_result_t`) for a job an action was
/// refused on: what condor_rm, condor_hold and condor_release word their
/// messages by.
fn action_result(e: &schedd::queue::QueueError, action: Action) -> i64 {
    use schedd::queue::QueueError;
    match e {
        QueueError::NoSuchJob(_) => 2,
        QueueError::WrongStatus { status, .. } => match (action, status) {
            (Action::Hold, JobStatus::Held) | (Action::Remove, JobStatus::Removed) => 4,
            _ => 3,
        },
        QueueError::NotPermitted(_) => 5,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wire::api::JobSpec;

    fn job(cluster: u32, proc: u32, log: Option<&Path>) -> String {
        let mut ad = ClassAd::new();
        ad.insert_value("ClusterId", i64::from(cluster));
        ad.insert_value("ProcId", i64::from(proc));
        ad.insert_value("Cmd", "/bin/sleep");
        ad.insert_value("Owner", "mallory");
        if let Some(l) = log {
            ad.insert_value("UserLog", l.display().to_string().as_str());
        }
        ad_text(&ad)
    }

    fn open(dir: &Path) -> Schedd {
        Schedd::open(
            &dir.join("queue.db"),
            PoolConfig {
                super_users: SuperUsers::new(["root"]),
                ..PoolConfig::default()
            },
            "<unix:test>".into(),
        )
        .unwrap()
    }

    fn submit(s: &mut Schedd, user: &str, n: u32, log: Option<&Path>) -> u32 {
        let c = s.new_cluster(user).unwrap().cluster;
        let ads = (0..n).map(|p| job(c, p, log)).collect();
        s.submit(user, SubmitRequest { cluster: c, ads }, 1000)
            .unwrap();
        c
    }

    fn ids(sel: &[&str]) -> Selection {
        Selection {
            ids: sel.iter().map(|s| JobSpec::parse(s).unwrap()).collect(),
            ..Selection::default()
        }
    }

    #[test]
    fn owner_comes_from_the_peer_and_jobs_survive_reopening() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("job.log");
        let mut s = open(dir.path());
        // The log is written as its owner, who must exist here.
        // SAFETY: geteuid cannot fail.
        let me = crate::identity::user_name(unsafe { libc::geteuid() }).unwrap();
        let c = submit(&mut s, &me, 2, Some(&log));
        let a = s.query(&me, &QueryRequest::default(), 1000).unwrap();
        assert_eq!(a.ads.len(), 2);
        assert!(
            a.ads[0].contains(&format!("Owner = \"{me}\"")),
            "{}",
            a.ads[0]
        );
        assert_eq!(a.user_totals.idle, 2);
        let text = std::fs::read_to_string(&log).unwrap();
        assert_eq!(
            text.matches("Job submitted from host: <unix:test>").count(),
            2,
            "{text}"
        );
        drop(s);
        let s = open(dir.path());
        assert_eq!(s.queue().len(), 2);
        assert_eq!(s.queue().next_cluster(), i64::from(c) + 1);
    }

    #[test]
    fn only_the_owner_or_a_super_user_may_act_and_refusals_say_why() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = open(dir.path());
        let c = submit(&mut s, "alice", 1, None);
        let hold = |reason: Option<&str>| ActRequest {
            action: Action::Hold,
            selection: ids(&[&format!("{c}.0")]),
            reason: reason.map(str::to_string),
        };
        let a = s.act("bob", &hold(None), 1001).unwrap();
        assert!(a.done.is_empty());
        assert!(
            a.failed[0]
                .error
                .contains("bob may not hold job 1.0, which belongs to alice"),
            "{:?}",
            a.failed
        );
        let a = s.act("alice", &hold(Some("lunch")), 1001).unwrap();
        assert_eq!(a.done, vec!["1.0"]);
        let ad =
            ClassAd::parse(&s.query("alice", &QueryRequest::default(), 1).unwrap().ads[0]).unwrap();
        assert_eq!(literal_str(&ad, "HoldReason").as_deref(), Some("lunch"));
        // Removal by root moves the job to the history.
        let rm = ActRequest {
            action: Action::Remove,
            selection: Selection::default(),
            reason: None,
        };
        assert_eq!(s.act("root", &rm, 1002).unwrap().done, vec!["1.0"]);
        assert!(s.queue().is_empty());
        let h = s.history("root", &HistoryRequest::default(), 1003).unwrap();
        assert_eq!(h.ads.len(), 1);
        assert!(
            h.ads[0].contains("via condor_rm (by user root)"),
            "{}",
            h.ads[0]
        );
    }

    #[test]
    fn bad_submissions_are_refused_and_queue_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = open(dir.path());
        let req = |cluster, ads| SubmitRequest { cluster, ads };
        let e = s
            .submit("alice", req(7, vec![job(7, 0, None)]), 1)
            .unwrap_err();
        assert!(e.message.contains("was not handed out"), "{e:?}");
        let c = s.new_cluster("alice").unwrap().cluster;
        let e = s
            .submit("bob", req(c, vec![job(c, 0, None)]), 1)
            .unwrap_err();
        assert_eq!(e.status, 403);
        let e = s
            .submit("alice", req(c, vec!["[ A = ".into()]), 1)
            .unwrap_err();
        assert!(e.message.contains("does not parse"), "{e:?}");
        let e = s
            .submit("alice", req(c, vec![job(c, 1, None)]), 1)
            .unwrap_err();
        assert!(e.message.contains("ProcId = 0"), "{e:?}");
        assert!(s.queue().is_empty());
        let e = s
            .query(
                "alice",
                &QueryRequest {
                    selection: Selection {
                        constraint: Some("JobStatus ==".into()),
                        ..Selection::default()
                    },
                    projection: vec![],
                },
                1,
            )
            .unwrap_err();
        assert!(e.message.contains("constraint does not parse"), "{e:?}");
    }

    #[test]
    fn periodic_policy_holds_and_the_hold_is_stored() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = open(dir.path());
        let c = s.new_cluster("alice").unwrap().cluster;
        let mut ad = ClassAd::parse(&job(c, 0, None)).unwrap();
        ad.insert(
            "PeriodicHold",
            classad::parse_expr("time() > QDate + 10").unwrap(),
        );
        ad.insert_value("QDate", 1000i64);
        s.submit(
            "alice",
            SubmitRequest {
                cluster: c,
                ads: vec![ad_text(&ad)],
            },
            1000,
        )
        .unwrap();
        assert_eq!(s.periodic(1005).unwrap(), 0);
        assert_eq!(s.periodic(1100).unwrap(), 1);
        drop(s);
        let s = open(dir.path());
        assert_eq!(
            s.queue().status(JobId::new(i64::from(c), 0)),
            Some(JobStatus::Held)
        );
    }

    fn constraint(text: &str) -> Selection {
        Selection {
            constraint: Some(text.into()),
            ..Selection::default()
        }
    }

    #[test]
    fn a_query_reads_the_queue_as_it_was_when_taken() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = open(dir.path());
        let c = submit(&mut s, "alice", 2, None);
        // Taken under the lock; evaluated later, without it, while the
        // queue changes: it answers for the queue as it was.
        let q = s.query_snapshot("alice", QueryRequest::default(), 1000);
        submit(&mut s, "alice", 1, None);
        let hold = ActRequest {
            action: Action::Hold,
            selection: ids(&[&format!("{c}.0")]),
            reason: None,
        };
        assert_eq!(s.act("alice", &hold, 1001).unwrap().done, vec!["1.0"]);
        let a = q.run(&Budget::unlimited()).unwrap();
        assert_eq!(a.ads.len(), 2);
        assert_eq!((a.all_totals.jobs, a.all_totals.idle), (2, 2));
        // A new one sees the queue now.
        let a = s.query("alice", &QueryRequest::default(), 1002).unwrap();
        assert_eq!((a.all_totals.jobs, a.all_totals.held), (3, 1));
    }

    #[test]
    fn only_queries_that_evaluate_nothing_written_are_cheap() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = open(dir.path());
        submit(&mut s, "alice", 100, None);
        let cheap = |c: Option<&str>| {
            let req = QueryRequest {
                selection: Selection {
                    constraint: c.map(str::to_string),
                    ..Selection::default()
                },
                projection: vec![],
            };
            s.query_snapshot("alice", req, 1000).is_cheap()
        };
        // Counting (nothing selected) is cheap; 100 ads written, or any
        // constraint to evaluate, are not.
        assert!(cheap(Some("false")));
        assert!(cheap(Some("0")));
        assert!(!cheap(None));
        assert!(!cheap(Some("true")));
        assert!(!cheap(Some("JobStatus == 1")));
        assert!(!cheap(Some("false || regexp(\"a\", Cmd)")));
    }

    #[test]
    fn a_query_that_runs_out_of_time_is_refused_and_says_why() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = open(dir.path());
        submit(&mut s, "alice", 3, None);
        let req = QueryRequest {
            selection: constraint("JobStatus == 1"),
            projection: vec![],
        };
        let spent = Budget::new(Duration::ZERO);
        let e = s
            .query_snapshot("alice", req.clone(), 1000)
            .run(&spent)
            .unwrap_err();
        assert_eq!(e.status, 503);
        assert!(
            e.message.starts_with(
                "the constraint took too long to evaluate: the pool stops a query after 0 seconds"
            ) && e.message.contains("it had looked at 0 of 3 ads"),
            "{e:?}"
        );
        // The history and an action's selection are held to it too.
        let h = s
            .history_scan("alice", HistoryRequest::default(), 1000)
            .take(Vec::new(), &spent);
        assert!(h.is_ok(), "nothing to look at is never too long");
        let act = ActRequest {
            action: Action::Remove,
            selection: constraint("true"),
            reason: None,
        };
        let e = s
            .act_snapshot("alice", &act, 1000)
            .select(&spent)
            .unwrap_err();
        assert!(e.message.contains("took too long"), "{e:?}");
        assert_eq!(s.queue().len(), 3, "nothing was removed");
        // With time to spare it answers.
        let a = s
            .query_snapshot("alice", req, 1000)
            .run(&Budget::new(Duration::from_secs(60)))
            .unwrap();
        assert_eq!(a.ads.len(), 3);
    }

    #[test]
    fn an_action_acts_on_what_its_selection_chose_and_rechecks_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = open(dir.path());
        let c = submit(&mut s, "alice", 2, None);
        let rm = ActRequest {
            action: Action::Remove,
            selection: constraint("JobStatus == 1"),
            reason: None,
        };
        // Selected off the lock (both idle)...
        let chosen = s
            .act_snapshot("bob", &rm, 1000)
            .select(&Budget::unlimited())
            .unwrap();
        assert_eq!(chosen.len(), 2);
        // ...then one is removed by its owner before the action runs.
        let first = ActRequest {
            action: Action::Remove,
            selection: ids(&[&format!("{c}.0")]),
            reason: None,
        };
        assert_eq!(s.act("alice", &first, 1001).unwrap().done, vec!["1.0"]);
        // The job gone is passed over; whether bob may act on the other is
        // decided now (he may not).
        let a = s.act_on("bob", &rm, chosen, 1002).unwrap();
        assert!(a.done.is_empty());
        assert_eq!(a.failed.len(), 1);
        assert!(
            a.failed[0].error.contains("bob may not remove job 1.1"),
            "{a:?}"
        );
    }

    #[test]
    fn the_history_is_read_page_by_page_with_its_limit() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = open(dir.path());
        let n = HISTORY_PAGE as u32 + 10;
        submit(&mut s, "alice", n, None);
        let rm = ActRequest {
            action: Action::Remove,
            selection: Selection::default(),
            reason: None,
        };
        assert_eq!(s.act("alice", &rm, 1001).unwrap().done.len(), n as usize);
        let all = s
            .history("alice", &HistoryRequest::default(), 1002)
            .unwrap();
        assert_eq!(all.ads.len(), n as usize);
        // Newest first across the pages: the last proc removed first.
        assert!(
            all.ads[0].contains(&format!("ProcId = {}", n - 1)),
            "{}",
            all.ads[0]
        );
        for (limit, selection) in [
            (3, Selection::default()),
            (HISTORY_PAGE + 5, constraint("ProcId >= 0")),
            (1, constraint("ProcId == 2")),
        ] {
            let req = HistoryRequest {
                selection,
                limit: Some(limit),
                projection: vec!["ProcId".into()],
            };
            let h = s.history("alice", &req, 1003).unwrap();
            assert_eq!(h.ads.len(), limit, "{req:?}");
        }
        let mut scan = s.history_scan("alice", HistoryRequest::default(), 1004);
        let page = s.history_page(&scan).unwrap();
        assert_eq!(page.len(), HISTORY_PAGE);
        scan.take(page, &Budget::unlimited()).unwrap();
        assert!(scan.wants_more());
    }

    #[test]
    fn a_removed_job_enters_the_history_as_the_queue_held_it_with_the_removal() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = open(dir.path());
        // A cluster removed whole (its jobs leave together: one shared
        // record), one of them held first; and one job of another
        // cluster removed alone.
        let c = submit(&mut s, "alice", 3, None);
        let d = submit(&mut s, "alice", 2, None);
        let act = |action, sel: &[&str]| ActRequest {
            action,
            selection: ids(sel),
            reason: None,
        };
        let held = format!("{c}.1");
        assert_eq!(
            s.act("alice", &act(Action::Hold, &[&held]), 1001)
                .unwrap()
                .done,
            vec![held.clone()]
        );
        let queued: BTreeMap<String, ClassAd> = s
            .queue()
            .jobs()
            .map(|(id, ad)| (id.to_string(), ad.flattened()))
            .collect();
        let (cluster, alone) = (c.to_string(), format!("{d}.1"));
        for sel in [&cluster, &alone] {
            s.act("alice", &act(Action::Remove, &[sel]), 1002).unwrap();
        }
        let check = |s: &Schedd| {
            let h = s
                .history("alice", &HistoryRequest::default(), 1003)
                .unwrap();
            let ids: Vec<String> = h
                .ads
                .iter()
                .map(|text| {
                    let ad = ClassAd::parse(text).unwrap();
                    let id = format!(
                        "{}.{}",
                        ad.get("ClusterId").unwrap(),
                        ad.get("ProcId").unwrap()
                    );
                    let was = &queued[&id];
                    let removal = [
                        ("JobStatus", "3".to_string()),
                        (
                            "LastJobStatus",
                            if id == held { "5" } else { "1" }.to_string(),
                        ),
                        ("EnteredCurrentStatus", "1002".to_string()),
                        (
                            "RemoveReason",
                            "\"via condor_rm (by user alice)\"".to_string(),
                        ),
                    ];
                    for (name, e) in was.iter_inserted() {
                        if removal.iter().any(|(n, _)| n == &name.as_str()) {
                            continue;
                        }
                        assert_eq!(
                            ad.get(name.as_str()).map(|e| e.to_string()),
                            Some(e.to_string()),
                            "{id}: {name} in {text}"
                        );
                    }
                    for (name, value) in &removal {
                        assert_eq!(
                            ad.get(name).map(|e| e.to_string()).as_ref(),
                            Some(value),
                            "{id}: {name} in {text}"
                        );
                    }
                    assert_eq!(
                        ad.len(),
                        was.len() + 1 + usize::from(was.get("LastJobStatus").is_none()),
                        "{id}: {text}"
                    );
                    id
                })
                .collect();
            // Newest first: the job removed alone, then the cluster's.
            assert_eq!(
                ids,
                [
                    alone.clone(),
                    format!("{c}.2"),
                    format!("{c}.1"),
                    format!("{c}.0")
                ]
            );
        };
        check(&s);
        assert_eq!(s.queue().len(), 1);
        drop(s);
        let s = open(dir.path());
        check(&s);
        assert_eq!(s.queue().len(), 1);
        assert!(s.queue().job(JobId::new(i64::from(d), 0)).is_some());
    }

    #[test]
    fn a_submission_is_parsed_before_it_is_queued() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = open(dir.path());
        let c = s.new_cluster("alice").unwrap().cluster;
        let req = SubmitRequest {
            cluster: c,
            ads: vec![job(c, 0, None), job(c, 1, None)],
        };
        // Parsing needs nothing of the queue (it is done off the lock).
        let parsed = ParsedSubmission::parse(req).unwrap();
        assert!(s.queue().is_empty());
        let done = s.submit_parsed("alice", parsed, 1000).unwrap();
        assert_eq!(done.procs, 2);
        let e = ParsedSubmission::parse(SubmitRequest {
            cluster: c,
            ads: vec![],
        })
        .unwrap_err();
        assert!(e.message.contains("needs at least one job"), "{e:?}");
    }

    #[test]
    fn a_submitted_status_other_than_idle_or_held_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = open(dir.path());
        let c = s.new_cluster("alice").unwrap().cluster;
        let mut ad = ClassAd::parse(&job(c, 0, None)).unwrap();
        ad.insert_value("JobStatus", 2i64);
        let e = s
            .submit(
                "alice",
                SubmitRequest {
                    cluster: c,
                    ads: vec![ad_text(&ad)],
                },
                1000,
            )
            .unwrap_err();
        assert_eq!(e.status, 400);
        assert!(
            e.message
                .contains("JobStatus = 2 may not be submitted: a job enters the queue Idle (1)"),
            "{e:?}"
        );
        assert!(s.queue().is_empty());
        // Held is a status a submission may give.
        ad.insert_value("JobStatus", 5i64);
        s.submit(
            "alice",
            SubmitRequest {
                cluster: c,
                ads: vec![ad_text(&ad)],
            },
            1000,
        )
        .unwrap();
        assert_eq!(
            s.queue().status(JobId::new(i64::from(c), 0)),
            Some(JobStatus::Held)
        );
    }

    fn edit_req(target: EditTarget, name: &str, value: &str) -> EditRequest {
        EditRequest {
            target,
            name: name.into(),
            value: value.into(),
        }
    }

    #[test]
    fn edits_are_stored_in_one_transaction_and_survive_reopening() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = open(dir.path());
        let c = i64::from(submit(&mut s, "alice", 2, None));
        s.take_touched();
        let by_id = edit_req(EditTarget::Jobs(vec![JobId::new(c, 0)]), "Foo", "42");
        let plan = s.edit("alice", &by_id, 1001).unwrap();
        assert_eq!(plan.matched, 1);
        // The claim core sees the edited job.
        assert_eq!(s.take_touched(), vec![JobId::new(c, 0)]);
        let constraint = classad::parse_expr(&format!("ClusterId == {c}")).unwrap();
        let by_constraint = edit_req(EditTarget::Constraint(constraint), "Bar", "\"x\"");
        let plans = s
            .edit_all(
                "alice",
                &[
                    by_constraint,
                    edit_req(
                        EditTarget::Jobs(vec![JobId::new(c, -1)]),
                        "RequestMemory",
                        "64",
                    ),
                ],
                1002,
            )
            .unwrap();
        assert_eq!(plans[0].matched, 2);
        // Refused: not the owner; immutable; nothing changes.
        let e = s.edit("bob", &by_id, 1003).unwrap_err();
        assert_eq!((e.status, e.errno()), (403, 13), "{e:?}");
        let owner = edit_req(
            EditTarget::Jobs(vec![JobId::new(c, 1)]),
            "Owner",
            "\"root\"",
        );
        let e = s.edit("root", &owner, 1003).unwrap_err();
        assert_eq!(e.errno(), 13);
        // One refusal in a batch undoes the edits before it.
        let e = s
            .edit_all(
                "alice",
                &[
                    edit_req(EditTarget::Jobs(vec![JobId::new(c, 0)]), "Foo", "7"),
                    edit_req(EditTarget::Jobs(vec![JobId::new(c, 9)]), "Foo", "7"),
                ],
                1004,
            )
            .unwrap_err();
        assert_eq!((e.status, e.errno()), (404, 2));
        let foo = literal_int(s.queue().job(JobId::new(c, 0)).unwrap(), "Foo");
        assert_eq!(foo, Some(42));
        drop(s);
        let s = open(dir.path());
        let ad = |p: i64| s.queue().job(JobId::new(c, p)).unwrap().clone();
        assert_eq!(literal_int(&ad(0), "Foo"), Some(42));
        assert_eq!(ad(1).get("Foo").map(|_| ()), None);
        assert_eq!(literal_str(&ad(1), "Bar").as_deref(), Some("x"));
        assert_eq!(literal_int(&ad(1), "RequestMemory"), Some(64));
        assert_eq!(literal_str(&ad(1), "Owner").as_deref(), Some("alice"));
    }
}
