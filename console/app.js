// Agent API console: vanilla JS modules, no build step. Hash routes:
//   #/sessions  #/sessions/<id>  #/audit?run_id=...  #/webhooks?id=<endpoint>  #/secrets  #/automations
import { Api, ApiError, followRun } from './api.js';

const KEY_STORAGE = 'agent-api-console.key';
const TERMINAL = new Set(['completed', 'failed', 'cancelled', 'expired', 'terminated']);
const main = document.getElementById('main');
const state = { api: null, role: null, liveRun: null, freshSecret: null };

// ---------- tiny DOM helpers (text only through textContent: nothing from the API is parsed as HTML)
function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) if (c !== null && c !== undefined && c !== false) el.append(c instanceof Node ? c : String(c));
  return el;
}
const fmtTime = (iso) => (iso ? new Date(iso).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'medium' }) : '–');
const fmtClock = (iso) => (iso ? new Date(iso).toLocaleTimeString(undefined, { hour12: false }) + '.' + String(new Date(iso).getMilliseconds()).padStart(3, '0') : '–');
const compact = (v, max = 160) => {
  const s = JSON.stringify(v) ?? '';
  return s.length > max ? s.slice(0, max - 1) + '…' : s;
};
const shortId = (id) => (id && id.length > 14 ? `${id.slice(0, 9)}…${id.slice(-4)}` : id);

function chip(status, extra = '') {
  const tone = { completed: 'ok', active: 'ok', approved: 'ok', ok: 'ok', failed: 'bad', terminated: 'bad', rejected: 'bad', expired: 'bad', cancelled: 'bad', archived: '', waiting_for_approval: 'warn', 'awaiting approval': 'warn', waiting_for_tool: 'warn', waiting_for_input: 'warn', 'awaiting input': 'warn', waiting_for_subagents: 'warn', waiting_for_callback: 'warn', waiting_for_timer: 'warn', waiting_for_quota: 'warn', waiting: 'warn', cancelling: 'warn', queued: 'live', running: 'live', requested: 'live', delivered: 'ok', pending: 'live', disabled: 'warn', started: 'ok', skipped: 'warn', paused: 'warn' }[status];
  return h('span', { class: `chip ${tone ? `chip-${tone}` : ''} ${extra}` }, String(status).replaceAll('_', ' '));
}

function toast(message, bad = false) {
  const t = h('div', { class: `toast ${bad ? 'toast-bad' : ''}` }, message);
  document.getElementById('toasts').append(t);
  setTimeout(() => t.remove(), 6000);
}
function describeError(err) {
  if (err instanceof ApiError) return `${err.code}: ${err.message}${err.requestId ? ` (request ${err.requestId})` : ''}`;
  return String(err && err.message ? err.message : err);
}

function setPage(title, ...nodes) {
  document.title = `${title} · Agent API console`;
  main.replaceChildren(...nodes);
}

/** A page of a list and the form that adds to it (webhooks, secrets, automations): heading and intro, the list, the titled form beside it. */
function setListPage(title, intro, list, formId, formTitle, ...form) {
  setPage(
    title,
    h('div', { class: 'page-head' }, h('div', {}, h('h1', {}, title), h('p', {}, intro))),
    h('div', { class: 'audit-layout' }, list, h('section', { class: 'panel', 'aria-labelledby': formId }, h('h2', { id: formId }, formTitle), ...form)),
  );
}

// ---------- identity
async function signIn(key) {
  const api = new Api(key);
  await api.get('/v1/sessions', { limit: 1 }); // 401 for an unknown key
  let role = 'member';
  try {
    await api.get('/v1/admin/audit', { limit: 1 });
    role = 'admin';
  } catch (err) {
    if (!(err instanceof ApiError && err.status === 403)) throw err;
  }
  state.api = api;
  state.role = role;
  sessionStorage.setItem(KEY_STORAGE, key);
  document.getElementById('nav').hidden = false;
  document.getElementById('identity').hidden = false;
  document.getElementById('nav-audit').hidden = role !== 'admin';
  document.getElementById('nav-webhooks').hidden = role !== 'admin';
  document.getElementById('nav-secrets').hidden = role !== 'admin';
  document.getElementById('key-badge').replaceChildren('Key ', h('strong', {}, `${key.slice(0, 4)}…${key.slice(-4)}`), ` · ${role}`);
}

function signOut() {
  sessionStorage.removeItem(KEY_STORAGE);
  stopLive();
  state.api = null;
  state.role = null;
  document.getElementById('nav').hidden = true;
  document.getElementById('identity').hidden = true;
  renderKeyView();
}

function renderKeyView(error) {
  const input = h('input', { id: 'api-key', type: 'password', name: 'api-key', autocomplete: 'off', required: true, 'aria-describedby': 'api-key-hint', spellcheck: 'false' });
  const err = h('p', { class: 'error-text', id: 'key-error', role: 'alert' }, error || '');
  const form = h(
    'form',
    {
      onsubmit: async (e) => {
        e.preventDefault();
        err.textContent = '';
        const button = form.querySelector('button');
        button.disabled = true;
        try {
          await signIn(input.value.trim());
          location.hash = '#/sessions';
          await route();
        } catch (e2) {
          err.textContent = e2 instanceof ApiError && e2.status === 401 ? 'This key is not known to the service.' : describeError(e2);
          button.disabled = false;
          input.focus();
        }
      },
    },
    h('label', { for: 'api-key' }, 'API key'),
    input,
    h('p', { class: 'hint', id: 'api-key-hint' }, 'Sent as a Bearer token. Kept in this tab only (sessionStorage). Local development key: ', h('code', {}, 'dev-key-0001'), '.'),
    err,
    h('button', { class: 'btn btn-primary', type: 'submit' }, 'Continue'),
  );
  setPage('Sign in', h('section', { class: 'panel key-view', 'aria-labelledby': 'key-title' }, h('h1', { id: 'key-title' }, 'Open the console'), h('p', { class: 'muted' }, 'Enter an API key to see your sessions, chat with agents, approve tool calls and, as an admin, read the audit trail.'), form));
  input.focus();
}

// ---------- sessions list
async function renderSessions() {
  const api = state.api;
  const [page, agents] = await Promise.all([api.get('/v1/sessions', { limit: 50 }), api.get('/v1/agents').catch(() => ({ data: [] }))]);
  const rows = page.data.map((s) =>
    h(
      'tr',
      {},
      h('td', {}, h('a', { href: `#/sessions/${s.id}` }, s.title || 'Untitled session'), h('div', { class: 'muted small mono' }, s.id)),
      h('td', {}, s.agent_id),
      // What the session is doing (its runs' work status), not its own active|archived.
      h('td', {}, chip(s.status === 'archived' ? 'archived' : s.work_status)),
      h('td', { class: 'small' }, fmtTime(s.last_active_at)),
    ),
  );
  const table = page.data.length
    ? h('div', { class: 'table-wrap' }, h('table', {}, h('caption', { class: 'visually-hidden' }, 'Your sessions, newest first'), h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Session'), h('th', { scope: 'col' }, 'Agent'), h('th', { scope: 'col' }, 'Status'), h('th', { scope: 'col' }, 'Last active'))), h('tbody', {}, rows)))
    : h('p', { class: 'empty' }, 'No sessions yet. Create one to start chatting.');

  const title = h('input', { id: 'new-title', type: 'text', name: 'title', maxlength: 200, placeholder: 'e.g. Order O-1001' });
  const agent = h('select', { id: 'new-agent', name: 'agent' }, h('option', { value: '' }, 'Default agent'), agents.data.map((a) => h('option', { value: a.id }, `${a.id} – ${a.description || a.model}`)));
  const err = h('p', { class: 'error-text', role: 'alert' });
  const form = h(
    'form',
    {
      class: 'stack',
      onsubmit: async (e) => {
        e.preventDefault();
        err.textContent = '';
        try {
          const body = {};
          if (title.value.trim()) body.title = title.value.trim();
          if (agent.value) body.agent_id = agent.value;
          const s = await api.post('/v1/sessions', body);
          location.hash = `#/sessions/${s.id}`;
        } catch (e2) {
          err.textContent = describeError(e2);
        }
      },
    },
    h('div', {}, h('label', { for: 'new-title' }, 'Title ', h('span', { class: 'muted' }, '(optional)')), title),
    agents.data.length ? h('div', {}, h('label', { for: 'new-agent' }, 'Agent'), agent) : null,
    err,
    h('button', { class: 'btn btn-primary', type: 'submit' }, 'Create session'),
  );
  setPage(
    'Sessions',
    h('div', { class: 'page-head' }, h('div', {}, h('h1', {}, 'Sessions'), h('p', {}, page.data.length ? `${page.data.length}${page.has_more ? '+' : ''} session${page.data.length === 1 ? '' : 's'}` : 'Conversations with your agents'))),
    h('div', { class: 'sessions-layout' }, h('section', { class: 'panel', style: 'padding:0', 'aria-label': 'Session list' }, table), h('section', { class: 'panel', 'aria-labelledby': 'new-session-title' }, h('h2', { id: 'new-session-title' }, 'New session'), form)),
  );
}

// ---------- session view: one timeline
// Messages, tool calls, handoffs and subagents render through the same builders whether they come
// from the history (GET messages) or live from a run's events, so a page shows each thing once.

/** One tool call as a card (status, arguments, then its result); the live view updates it in place. */
function toolCard(call) {
  const status = h('span', {}, chip('requested'));
  const duration = h('span', { class: 'tool-duration' });
  const body = h('div', { class: 'tool-body' }, compact(call.arguments, 400));
  const card = h(
    'div',
    { class: 'tool-card', dataset: { status: 'requested', toolCallId: call.tool_call_id }, role: 'group', 'aria-label': `Tool ${call.tool_name}` },
    h('div', { class: 'tool-head' }, h('span', { class: 'tool-name' }, call.tool_name), status, call.risk && call.risk !== 'auto' ? h('span', { class: 'muted small' }, `risk: ${call.risk}`) : null, duration),
    body,
  );
  return { card, status, duration, body, timer: null };
}
function setToolStatus(t, status) {
  t.card.dataset.status = status;
  t.status.replaceChildren(chip(status));
}
/** A tool's outcome on its card: `{ok, result}` / `{ok: false, error}` (a result part or a tool event). */
function finishToolCard(t, ok, value, durationMs) {
  clearInterval(t.timer);
  setToolStatus(t, ok ? 'completed' : 'failed');
  if (durationMs !== undefined) t.duration.textContent = `${durationMs} ms`;
  t.body.append(h('div', {}, ok ? `→ ${compact(value, 400)}` : `✗ ${value && value.code ? `${value.code}: ${typeof value.message === 'string' ? value.message : compact(value.message)}` : compact(value)}`));
}

/** Handoff (docs/multi-agent.md): the run goes on with another agent. */
function handoffEntry(from, to, reason) {
  return h(
    'div',
    { class: 'timeline-entry timeline-handoff', role: 'note', dataset: { kind: 'handoff', from, to } },
    h('span', { 'aria-hidden': 'true' }, '⇄'),
    h('span', {}, 'Handed off from ', h('strong', {}, from), ' to ', h('strong', {}, to), reason ? ` · ${reason}` : ''),
  );
}
/** A subagent's step on the parent's timeline (created, completed with its run's status, closed), linked to its session. */
function subagentEntry(kind, sub) {
  const label = sub.name || shortId(sub.id);
  return h(
    'div',
    { class: 'timeline-entry timeline-subagent', role: 'note', dataset: { kind: `subagent.${kind}`, subagentId: sub.id } },
    h('span', { 'aria-hidden': 'true' }, '↳'),
    h('span', {}, 'Subagent ', h('a', { href: `#/sessions/${encodeURIComponent(sub.id)}`, title: sub.id }, label), kind === 'created' ? ` started${sub.agent_id ? ` (${sub.agent_id})` : ''}` : kind === 'closed' ? ' closed' : ' finished '),
    kind === 'completed' ? chip(sub.status) : null,
  );
}

function userBubble(text, createdAt, status) {
  return h('div', { class: 'msg msg-user' }, h('div', { class: 'msg-role' }, 'user'), h('div', { class: 'bubble' }, text), h('div', { class: 'msg-meta' }, fmtTime(createdAt), status && status !== 'completed' ? ` · ${status}` : ''));
}

/**
 * The history as timeline nodes. `ctx` carries what later messages need: the agent in control (for
 * handoffs), the tool cards by call id (a result fills its call's card), subagent names.
 */
function messageNodes(m, ctx) {
  const nodes = [];
  if (m.role === 'tool') {
    for (const p of m.content) {
      if (p.type !== 'tool_result') continue;
      const t = ctx.cards.get(p.tool_call_id);
      if (t) finishToolCard(t, p.ok !== false, p.ok === false ? p.error : p.result);
      else nodes.push(h('div', { class: 'tool-line' }, chip(p.ok === false ? 'failed' : 'completed'), h('span', { class: 'mono' }, `${p.tool_name || 'tool'} → ${compact(p.ok === false ? p.error : p.result, 110)}`)));
      if (p.ok === false || !p.result || typeof p.result !== 'object') continue;
      const r = p.result;
      const args = ctx.args.get(p.tool_call_id) || {};
      if (r.handed_off_to && r.handed_off_to.id) {
        nodes.push(handoffEntry(ctx.agent, r.handed_off_to.id, typeof args.reason === 'string' ? args.reason : null));
        ctx.agent = r.handed_off_to.id;
      } else if (p.tool_name === 'create_subagent' && r.subagent_id) {
        const sub = { id: r.subagent_id, name: args.name || ctx.names.get(r.subagent_id), agent_id: args.agent_id };
        ctx.names.set(sub.id, sub.name);
        nodes.push(subagentEntry('created', sub));
      } else if (p.tool_name === 'wait_for_subagents' && Array.isArray(r.subagents)) {
        for (const c of r.subagents) if (c && c.subagent_id) nodes.push(subagentEntry('completed', { id: c.subagent_id, name: c.name || ctx.names.get(c.subagent_id), status: c.status }));
      } else if (p.tool_name === 'close_subagent' && r.subagent_id) {
        nodes.push(subagentEntry('closed', { id: r.subagent_id, name: ctx.names.get(r.subagent_id) }));
      }
    }
    return nodes;
  }
  const text = m.content.filter((p) => p.type === 'text').map((p) => p.text).join('');
  if (text && m.role === 'user') nodes.push(userBubble(text, m.created_at, m.status));
  else if (text) nodes.push(h('div', { class: 'msg msg-assistant' }, h('div', { class: 'msg-role' }, m.role), h('div', { class: 'bubble' }, text), h('div', { class: 'msg-meta' }, fmtTime(m.created_at), m.status !== 'completed' ? ` · ${m.status}` : '')));
  for (const p of m.content) {
    if (p.type === 'tool_call') {
      const t = toolCard(p);
      ctx.cards.set(p.tool_call_id, t);
      ctx.args.set(p.tool_call_id, p.arguments && typeof p.arguments === 'object' ? p.arguments : {});
      nodes.push(t.card);
    }
    if (p.type === 'attachment_ref') nodes.push(h('div', { class: 'tool-line' }, `📎 ${p.attachment_id}`));
  }
  return nodes;
}

function stopLive() {
  if (state.liveRun) state.liveRun.abort();
  state.liveRun = null;
}

async function renderSession(id) {
  const api = state.api;
  const [session, messages, runs, subagents] = await Promise.all([
    api.get(`/v1/sessions/${id}`),
    api.get(`/v1/sessions/${id}/messages`, { limit: 100 }),
    api.get(`/v1/sessions/${id}/runs`, { limit: 10 }),
    api.get(`/v1/sessions/${id}/subagents`, { limit: 100 }).catch(() => ({ data: [] })),
  ]);
  const list = h('div', { class: 'messages', id: 'messages', role: 'log', 'aria-label': 'Conversation', 'aria-live': 'off' });
  // One timeline: the history up to the active run; the active run itself is replayed from its
  // events by the live view (its cards keep their Approve buttons and update in place), so none of
  // its messages is drawn twice. Its first user message (the input) stands before the replay; a
  // message it took later (steering) is drawn where the run took it (`run.input`).
  const activeRunId = session.active_run_id;
  const names = new Map(subagents.data.map((c) => [c.id, c.subagent?.name]));
  const ctx = { agent: session.agent.id, cards: new Map(), args: new Map(), names };
  const held = new Map();
  let inputShown = false;
  for (const m of messages.data) {
    if (activeRunId && m.run_id === activeRunId) {
      if (m.role !== 'user') continue;
      if (inputShown) {
        held.set(m.id, m);
        continue;
      }
      inputShown = true;
    }
    list.append(...messageNodes(m, ctx));
  }
  // A call of a finished run with no result never ran (its run was cancelled or ended first).
  if (!messages.has_more) for (const t of ctx.cards.values()) if (t.card.dataset.status === 'requested') setToolStatus(t, 'not run');
  if (!messages.data.length) list.append(h('p', { class: 'empty', id: 'empty-hint' }, 'No messages yet. Try “Please help with order O-1001”.'));

  const runStatus = h('span', { id: 'run-status', role: 'status', 'aria-live': 'polite' });
  const cancel = h('button', { class: 'btn btn-bad btn-sm', type: 'button', id: 'cancel-run' }, 'Cancel run');
  const runLabel = h('span', { class: 'muted small mono' });
  const runbar = h('div', { class: 'runbar', hidden: true }, h('strong', { class: 'small' }, 'Run'), runLabel, runStatus, h('span', { class: 'spacer' }), cancel);

  const textarea = h('textarea', { id: 'composer-input', name: 'message', rows: 3, placeholder: 'Write a message…', 'aria-describedby': 'composer-hint' });
  const send = h('button', { class: 'btn btn-primary', type: 'submit', id: 'send' }, 'Send');
  const composerErr = h('p', { class: 'error-text', role: 'alert' });
  const composer = h(
    'form',
    { class: 'composer', 'aria-label': 'Send a message', onsubmit: (e) => (e.preventDefault(), submit()) },
    h('label', { for: 'composer-input', class: 'visually-hidden' }, 'Message'),
    textarea,
    composerErr,
    h('div', { class: 'composer-actions' }, h('span', { class: 'hint', id: 'composer-hint' }, 'Enter to send · Shift+Enter for a new line · while a run is going, a message steers it; when the agent asks, it answers'), send),
  );
  textarea.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      submit();
    }
  });
  const archived = session.status === 'archived';
  if (archived) {
    textarea.disabled = true;
    send.disabled = true;
    composerErr.textContent = 'This session is archived: it keeps its history but takes no new runs.';
  }

  const runsList = h('ul', { class: 'run-list', id: 'run-list' });
  const toolsList = h('ul', { class: 'run-list', id: 'agent-tools' }, h('li', { class: 'muted' }, 'Loading…'));
  const subagentTree = h('ul', { class: 'subagent-tree', id: 'subagent-tree' });
  const details = h('dl', { id: 'session-details' });
  let latestRun = runs.data[0] || null;
  // Status is the run's (what the session is doing), not the session's own active|archived.
  const fillDetails = (sess) =>
    details.replaceChildren(
      ...[
        h('dt', {}, 'ID'),
        h('dd', { class: 'mono' }, sess.id),
        h('dt', {}, 'Agent'),
        h('dd', {}, `${sess.agent.id} v${sess.agent.version}`),
        latestRun?.current_agent && latestRun.current_agent.id !== sess.agent.id ? [h('dt', {}, 'In control'), h('dd', { id: 'current-agent' }, `${latestRun.current_agent.id} v${latestRun.current_agent.version}`)] : null,
        h('dt', {}, 'Model'),
        h('dd', {}, sess.agent.model),
        h('dt', {}, 'Run status'),
        h('dd', { id: 'latest-run-status', title: latestRun ? `run ${latestRun.id}` : '' }, latestRun ? chip(latestRun.status) : h('span', { class: 'muted' }, 'no runs yet'), sess.status === 'archived' ? [' ', chip('archived')] : null),
        sess.parent_session_id ? [h('dt', {}, 'Subagent of'), h('dd', {}, h('a', { href: `#/sessions/${encodeURIComponent(sess.parent_session_id)}`, id: 'parent-session', title: sess.parent_session_id }, shortId(sess.parent_session_id)), sess.subagent ? ` · ${sess.subagent.name}` : '')] : null,
        h('dt', {}, 'Revision'),
        h('dd', {}, String(sess.revision)),
        h('dt', {}, 'Created'),
        h('dd', {}, fmtTime(sess.created_at)),
      ]
        .flat()
        .filter(Boolean),
    );
  fillDetails(session);
  /** The subagent tree: this session's children, each openable as its own session page, and theirs (3 levels). */
  const subagentNodes = async (children, depth) =>
    Promise.all(
      children.map(async (c) => {
        names.set(c.id, c.subagent?.name);
        const grand = depth < 3 ? await api.get(`/v1/sessions/${c.id}/subagents`, { limit: 100 }).catch(() => ({ data: [] })) : { data: [] };
        return h(
          'li',
          { dataset: { id: c.id } },
          h('a', { href: `#/sessions/${encodeURIComponent(c.id)}`, title: c.id }, c.subagent?.name || shortId(c.id)),
          ' ',
          chip(c.subagent?.status === 'closed' ? 'closed' : c.work_status),
          h('span', { class: 'muted small' }, ` ${c.agent_id}`),
          grand.data.length ? h('ul', { class: 'subagent-tree' }, ...(await subagentNodes(grand.data, depth + 1))) : null,
        );
      }),
    );
  let treeVersion = 0;
  const fillSubagents = async (children) => {
    const version = ++treeVersion;
    const nodes = children.length ? await subagentNodes(children, 1) : [h('li', { class: 'muted' }, 'No subagents')];
    if (version === treeVersion) subagentTree.replaceChildren(...nodes); // a later refresh wins
  };
  fillSubagents(subagents.data);
  /** Side panel: the session (revision moves with every message), its recent runs and its subagents. */
  const refreshSide = () => {
    Promise.all([api.get(`/v1/sessions/${id}`), api.get(`/v1/sessions/${id}/runs`, { limit: 10 })]).then(([sess, r]) => {
      latestRun = r.data[0] || null;
      fillDetails(sess);
      fillRuns(r.data);
    }, () => undefined);
    api.get(`/v1/sessions/${id}/subagents`, { limit: 100 }).then((r) => fillSubagents(r.data), () => undefined);
  };
  const fillRuns = (data) =>
    runsList.replaceChildren(...(data.length ? data.map((r) => h('li', {}, h('span', { class: 'mono', title: r.id }, shortId(r.id)), h('span', {}, chip(r.status), state.role === 'admin' ? [' ', h('a', { href: `#/audit?run_id=${r.id}`, class: 'small', 'aria-label': `Audit trail of run ${r.id}` }, 'audit')] : null))) : [h('li', { class: 'muted' }, 'No runs yet')]));
  fillRuns(runs.data);

  setPage(
    session.title || 'Session',
    h(
      'div',
      { class: 'page-head' },
      h(
        'div',
        {},
        h('p', { class: 'small' }, h('a', { href: '#/sessions' }, '← All sessions'), session.parent_session_id ? [' · ', h('a', { href: `#/sessions/${encodeURIComponent(session.parent_session_id)}` }, '↑ Parent session')] : null),
        h('h1', {}, session.subagent ? `Subagent ${session.subagent.name}` : session.title || 'Untitled session'),
      ),
    ),
    h(
      'div',
      { class: 'session-layout' },
      h('section', { class: 'panel conversation', 'aria-label': 'Conversation' }, list, runbar, composer),
      h(
        'aside',
        { 'aria-label': 'Session details' },
        h('section', { class: 'panel side' }, h('h2', {}, 'Details'), details),
        h('section', { class: 'panel side' }, h('h2', {}, 'Recent runs'), runsList),
        h('section', { class: 'panel side', 'aria-label': 'Subagents' }, h('h2', {}, 'Subagents'), subagentTree),
        h('section', { class: 'panel side', 'aria-label': 'Agent tools' }, h('h2', {}, 'Agent tools'), toolsList),
      ),
    ),
  );
  // The tools of the agent version this session pinned (built-in, http, mcp, function).
  api.get(`/v1/agents/${encodeURIComponent(session.agent.id)}/versions/${encodeURIComponent(session.agent.version)}`).then(
    (a) =>
      toolsList.replaceChildren(
        ...(a.tools.length
          ? a.tools.map((t) =>
              h(
                'li',
                { title: t.description || t.name },
                h('span', { class: 'mono' }, t.name),
                h('span', { class: 'mono muted tool-args', title: JSON.stringify(t.parameters || {}, null, 2) }, `(${Object.keys((t.parameters && t.parameters.properties) || {}).join(', ')})`),
                ' ',
                h('span', { class: 'muted small' }, [t.type, t.executor === 'client' ? 'client' : null, t.risk !== 'auto' ? t.risk : null, t.visibility === 'private' ? 'private' : null].filter(Boolean).join(' · ')),
              ),
            )
          : [h('li', { class: 'muted' }, 'No tools')]),
      ),
    () => toolsList.replaceChildren(h('li', { class: 'muted' }, 'Not available')),
  );
  list.scrollTop = list.scrollHeight;
  if (!archived) textarea.focus();

  // The message box stays usable while a run is active: what is sent then steers that run
  // (concurrency steer: it takes the message into its next model turn). It is disabled only while
  // a message is being posted.
  let watching = null;
  const setSending = (sending) => {
    send.disabled = sending || archived;
    textarea.disabled = sending || archived;
    if (!sending && !archived) textarea.focus();
  };

  async function submit() {
    const text = textarea.value.trim();
    if (!text || send.disabled) return;
    composerErr.textContent = '';
    setSending(true);
    try {
      const receipt = await api.post(`/v1/sessions/${id}/runs`, { input: { role: 'user', content: [{ type: 'text', text }] }, concurrency: 'steer' });
      textarea.value = '';
      setSending(false);
      document.getElementById('empty-hint')?.remove();
      list.append(h('div', { class: 'msg msg-user' }, h('div', { class: 'msg-role' }, 'user'), h('div', { class: 'bubble' }, text), h('div', { class: 'msg-meta' }, fmtTime(new Date().toISOString()))));
      list.scrollTop = list.scrollHeight;
      if (receipt.answered) toast('Answered the agent’s question: the run continues.');
      else if (receipt.steered && watching === receipt.run_id) toast('Sent to the running answer: it is taken into its next turn.');
      else watch(receipt.run_id);
    } catch (err) {
      composerErr.textContent = describeError(err);
      setSending(false);
    }
  }

  function watch(runId) {
    stopLive();
    watching = runId;
    runbar.hidden = false;
    runLabel.textContent = shortId(runId);
    runLabel.title = runId;
    runStatus.replaceChildren(chip(runs.data.find((r) => r.id === runId)?.status ?? 'queued'));
    cancel.hidden = false;
    cancel.disabled = false;
    cancel.onclick = async () => {
      cancel.disabled = true;
      try {
        const run = await api.post(`/v1/runs/${runId}/cancel`);
        runStatus.replaceChildren(chip(run.status));
      } catch (err) {
        toast(describeError(err), true);
        cancel.disabled = false;
      }
    };
    const live = new LiveRun(api, runId, list, {
      onStatus: (status) => {
        runStatus.replaceChildren(chip(status));
        if (TERMINAL.has(status)) cancel.hidden = true;
        refreshSide();
      },
      // A handoff changes the agent in control; a subagent's step changes the tree.
      onChange: refreshSide,
      held,
      names,
    });
    state.liveRun = live;
    api.get(`/v1/sessions/${id}/runs`, { limit: 10 }).then((r) => fillRuns(r.data), () => undefined);
    live
      .start()
      .then(async (finished) => {
        if (!finished) return;
        watching = null;
        const d = finished.data;
        runStatus.replaceChildren(
          chip(d.status),
          d.error ? h('span', { class: 'small', style: 'margin-left:8px' }, `${d.error.code}: ${d.error.message}`) : '',
          d.termination_reason ? h('span', { class: 'small' }, ` (${d.termination_reason})`) : '',
          d.usage ? h('span', { class: 'small muted', id: 'run-usage', style: 'margin-left:8px' }, usageText(d.usage)) : '',
        );
        refreshSide();
        // A message sent as the run ended is taken by a new run: follow it.
        const next = await api.get(`/v1/sessions/${id}`).catch(() => null);
        if (next?.active_run_id && state.liveRun === live) watch(next.active_run_id);
      })
      .catch((err) => {
        watching = null;
        toast(describeError(err), true);
      });
  }

  if (session.active_run_id) watch(session.active_run_id);
}

/** Typewriter: reveals queued text a few characters per frame (faster when it falls behind). */
class Typewriter {
  constructor(el) {
    this.el = el;
    this.queue = '';
    this.frame = null;
    this.idle = [];
  }
  push(text) {
    this.queue += text;
    if (!this.frame) this.frame = requestAnimationFrame(() => this.tick());
  }
  tick() {
    const n = Math.max(1, Math.ceil(this.queue.length / 14));
    this.el.textContent += this.queue.slice(0, n);
    this.queue = this.queue.slice(n);
    this.el.dispatchEvent(new Event('typed', { bubbles: true }));
    if (this.queue) this.frame = requestAnimationFrame(() => this.tick());
    else {
      this.frame = null;
      this.idle.splice(0).forEach((r) => r());
    }
  }
  done() {
    return this.queue || this.frame ? new Promise((r) => this.idle.push(r)) : Promise.resolve();
  }
}

/** Renders one run live from its event stream: typed text, tool cards, approvals. */
class LiveRun {
  constructor(api, runId, list, { onStatus, onChange = () => undefined, held = new Map(), names = new Map() }) {
    this.api = api;
    this.runId = runId;
    this.list = list;
    this.onStatus = onStatus;
    this.onChange = onChange;
    /** Messages of this run the history left out: drawn where the run takes them (run.input). */
    this.held = held;
    this.names = names;
    this.controller = new AbortController();
    this.messages = new Map();
    this.tools = new Map();
    list.addEventListener('typed', () => this.stick());
  }
  abort() {
    this.controller.abort();
    for (const t of this.tools.values()) clearInterval(t.timer);
  }
  stick() {
    const l = this.list;
    if (l.scrollHeight - l.scrollTop - l.clientHeight < 160) l.scrollTop = l.scrollHeight;
  }
  start() {
    return followRun(this.api, this.runId, {
      signal: this.controller.signal,
      onEvent: (ev) => this.handle(ev),
      onReconnect: ({ lastEventId }) => toast(`Connection lost; resuming after event ${lastEventId ?? 0}…`),
    }).then(async (finished) => {
      await Promise.all([...this.messages.values()].map((m) => m.writer.done()));
      return finished;
    });
  }
  handle(ev) {
    const d = ev.data;
    switch (ev.type) {
      case 'run.started':
      case 'run.resumed':
      case 'run.waiting':
        this.onStatus(d.status);
        break;
      case 'run.cancel_requested':
        this.onStatus('cancelling');
        break;
      case 'message.started': {
        if (d.role !== 'assistant') break;
        const bubble = h('div', { class: 'bubble typing', 'aria-busy': 'true' });
        const el = h('div', { class: 'msg msg-assistant', dataset: { messageId: d.message_id } }, h('div', { class: 'msg-role' }, 'assistant'), bubble);
        this.list.append(el);
        this.messages.set(d.message_id, { el, bubble, writer: new Typewriter(bubble) });
        this.stick();
        break;
      }
      case 'message.delta':
        this.messages.get(d.message_id)?.writer.push(d.delta);
        break;
      case 'message.completed': {
        const m = this.messages.get(d.message_id);
        if (!m) break;
        m.writer.done().then(() => {
          m.bubble.classList.remove('typing');
          m.bubble.removeAttribute('aria-busy');
          if (!m.bubble.textContent) m.el.remove();
          else m.el.append(h('div', { class: 'msg-meta' }, fmtTime(ev.occurred_at)));
        });
        break;
      }
      case 'tool.requested': {
        const t = toolCard(d);
        this.list.append(t.card);
        this.tools.set(d.tool_call_id, t);
        this.stick();
        break;
      }
      case 'tool.started': {
        const t = this.tools.get(d.tool_call_id);
        if (!t) break;
        this.setTool(t, 'running');
        const t0 = Date.now();
        t.timer = setInterval(() => (t.duration.textContent = `${((Date.now() - t0) / 1000).toFixed(1)} s`), 100);
        break;
      }
      case 'tool.completed':
      case 'tool.failed': {
        const t = this.tools.get(d.tool_call_id);
        if (!t) break;
        finishToolCard(t, ev.type === 'tool.completed', ev.type === 'tool.completed' ? d.result : d.error, d.duration_ms);
        t.question?.querySelector('.hint')?.replaceChildren('Answered.');
        this.stick();
        break;
      }
      case 'run.input': {
        // A message the run took while it went on (steering): drawn here, where the run took it.
        const m = this.held.get(d.message_id);
        if (!m) break;
        this.held.delete(d.message_id);
        const text = m.content.filter((p) => p.type === 'text').map((p) => p.text).join('');
        if (text) this.list.append(userBubble(text, m.created_at));
        this.stick();
        break;
      }
      case 'agent.handoff':
        this.list.append(handoffEntry(d.from_agent, d.to_agent, d.reason));
        this.stick();
        this.onChange();
        break;
      case 'subagent.created':
        this.names.set(d.subagent_id, d.name);
        this.list.append(subagentEntry('created', { id: d.subagent_id, name: d.name, agent_id: d.agent_id }));
        this.stick();
        this.onChange();
        break;
      case 'subagent.completed':
      case 'subagent.closed':
        this.list.append(subagentEntry(ev.type === 'subagent.completed' ? 'completed' : 'closed', { id: d.subagent_id, name: this.names.get(d.subagent_id), status: d.status }));
        this.stick();
        this.onChange();
        break;
      case 'approval.requested': {
        const t = this.tools.get(d.tool_call_id);
        if (!t) break;
        this.setTool(t, 'awaiting approval');
        const approve = h('button', { class: 'btn btn-ok btn-sm', type: 'button' }, 'Approve');
        const reject = h('button', { class: 'btn btn-bad btn-sm', type: 'button' }, 'Reject');
        const box = h('div', { class: 'approval', role: 'group', 'aria-label': `Approval for ${d.tool_name}` }, h('p', {}, `Run ${d.tool_name}? It needs your approval.`), approve, reject);
        const decide = async (decision) => {
          approve.disabled = reject.disabled = true;
          try {
            await this.api.post(`/v1/runs/${this.runId}/approvals/${d.approval_id}`, decision === 'reject' ? { decision, reason: 'rejected in the console' } : { decision });
          } catch (err) {
            if (!(err instanceof ApiError && (err.code === 'approval_already_decided' || err.code === 'approval_not_pending'))) {
              toast(describeError(err), true);
              approve.disabled = reject.disabled = false;
            }
          }
        };
        approve.onclick = () => decide('approve');
        reject.onclick = () => decide('reject');
        t.approval = box;
        t.card.append(box);
        this.stick();
        approve.focus({ preventScroll: true });
        break;
      }
      case 'run.input_requested': {
        // ask_user (docs/pauses-and-automations.md): the question stands in the tool's card; the message box answers it.
        const t = this.tools.get(d.tool_call_id);
        const box = h('div', { class: 'approval input-request', role: 'group', 'aria-label': 'Question from the agent' }, h('p', { class: 'question' }, d.question), h('p', { class: 'hint' }, 'Your next message answers it and the run continues.'));
        if (t) {
          this.setTool(t, 'awaiting input');
          t.question = box;
          t.card.append(box);
        } else this.list.append(box);
        this.stick();
        document.getElementById('composer-input')?.focus({ preventScroll: true });
        break;
      }
      case 'approval.accepted':
      case 'approval.rejected': {
        const t = this.tools.get(d.tool_call_id);
        if (!t) break;
        const accepted = ev.type === 'approval.accepted';
        t.approval?.replaceChildren(h('p', { style: `color: var(${accepted ? '--ok' : '--bad'})` }, `${accepted ? 'Approved' : 'Rejected'} by ${d.decided_by}${d.reason ? `: ${d.reason}` : ''}`));
        this.setTool(t, accepted ? 'approved' : 'rejected');
        break;
      }
      case 'run.finished':
        for (const t of this.tools.values()) clearInterval(t.timer);
        // Messages of this run it never took (none normally): shown at its end rather than lost.
        for (const m of this.held.values()) {
          const text = m.content.filter((p) => p.type === 'text').map((p) => p.text).join('');
          if (text) this.list.append(userBubble(text, m.created_at));
        }
        this.held.clear();
        this.onStatus(d.status);
        break;
      default:
        break;
    }
  }
  setTool(t, status) {
    setToolStatus(t, status);
  }
}

// ---------- audit (admin)
async function renderAudit(params) {
  const api = state.api;
  if (state.role !== 'admin') {
    setPage('Audit', h('section', { class: 'panel' }, h('h1', {}, 'Audit'), h('p', {}, 'The audit trail is for admin keys only.')));
    return;
  }
  const filters = { run_id: params.get('run_id') || '', session_id: params.get('session_id') || '', actor: params.get('actor') || '', action: params.get('action') || '' };
  const badge = h('span', { class: 'chip verify-badge', id: 'verify-badge', role: 'status' }, 'Checking chain…');
  const verify = async () => {
    badge.className = 'chip verify-badge';
    badge.textContent = 'Checking chain…';
    try {
      const v = await api.get('/v1/admin/audit/verify');
      badge.className = `chip verify-badge ${v.ok ? 'chip-ok' : 'chip-bad'}`;
      badge.textContent = v.ok ? `Chain verified · ${v.checked} records` : `Chain broken at record ${v.first_broken?.seq ?? '?'} (${v.checked} intact before it)`;
    } catch (err) {
      badge.className = 'chip verify-badge chip-bad';
      badge.textContent = `Verification failed: ${describeError(err)}`;
    }
  };

  // The latest signed checkpoint (what an outside auditor can check with the public key) and the export.
  const signed = h('span', { class: 'chip', id: 'audit-checkpoint', role: 'status' }, 'Checkpoint…');
  const showCheckpoint = async () => {
    try {
      const s = await api.get('/v1/admin/audit/status');
      const c = s.latest_checkpoint;
      signed.className = `chip ${c ? 'chip-ok' : ''}`;
      signed.textContent = c ? `Signed up to #${c.seq} · ${fmtClock(c.at)} · key ${c.key_id}` : 'No signed checkpoint yet';
      signed.title = c ? `Ed25519 signature of {tenant_id, seq, hash, at} at ${c.at}; hash ${c.hash}` : '';
    } catch (err) {
      signed.textContent = `Checkpoint unknown: ${describeError(err)}`;
    }
  };
  const exportTrail = async (format) => {
    try {
      const { blob, name } = await api.download('/v1/admin/audit/export', { format });
      const a = h('a', { href: URL.createObjectURL(blob), download: name });
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(a.href), 10_000);
      toast(`Exported ${name}: verify it with "agent-api audit verify --file ${name} --public-key key.pem"`);
      await showCheckpoint();
    } catch (err) {
      toast(describeError(err), true);
    }
  };

  const inputs = {};
  const field = (name, label, placeholder) => {
    inputs[name] = h('input', { id: `f-${name}`, type: 'search', name, value: filters[name], placeholder, autocomplete: 'off' });
    return h('div', { class: 'field' }, h('label', { for: `f-${name}` }, label), inputs[name]);
  };
  const form = h(
    'form',
    {
      class: 'panel audit-filters',
      role: 'search',
      'aria-label': 'Filter audit records',
      onsubmit: (e) => {
        e.preventDefault();
        const q = new URLSearchParams();
        for (const [k, el] of Object.entries(inputs)) if (el.value.trim()) q.set(k, el.value.trim());
        const target = `#/audit${q.toString() ? `?${q}` : ''}`;
        if (location.hash === target) route();
        else location.hash = target;
      },
    },
    h('div', { class: 'row' }, field('run_id', 'Run', 'run_…'), field('session_id', 'Session', 'sess_…'), field('actor', 'Actor', 'subject id'), field('action', 'Action', 'e.g. POST /v1/sessions'), h('button', { class: 'btn btn-primary', type: 'submit' }, 'Apply filters')),
  );

  const tbody = h('tbody');
  const detail = h('section', { class: 'panel detail', id: 'audit-detail', 'aria-live': 'polite', 'aria-label': 'Record detail' }, h('h2', {}, 'Record detail'), h('p', { class: 'muted' }, 'Select a record to see its actor, request, unredacted data and hashes.'));
  const more = h('button', { class: 'btn', type: 'button', hidden: true }, 'Load more');
  const count = h('p', { class: 'muted small', role: 'status' });
  let after = null;
  let total = 0;
  const select = (row, r) => {
    tbody.querySelectorAll('tr[aria-selected="true"]').forEach((x) => x.setAttribute('aria-selected', 'false'));
    row.setAttribute('aria-selected', 'true');
    detail.replaceChildren(
      h('h2', {}, `Record #${r.seq}`),
      h(
        'dl',
        {},
        ...[
          ['Action', r.action],
          ['Time', `${fmtTime(r.occurred_at)} (${r.occurred_at})`],
          ['Actor', `${r.actor_subject_id ?? '–'} (${r.actor_role ?? '–'})`],
          ['Key id', r.actor_key_id ?? '–'],
          ['Resource', r.resource_type ? `${r.resource_type} ${r.resource_id ?? ''}` : '–'],
          ['Session', r.session_id ?? '–'],
          ['Run', r.run_id ?? '–'],
          ['Request', r.request_id ?? '–'],
          ['Outcome', `${r.outcome ?? '–'}${r.status ? ` (HTTP ${r.status})` : ''}`],
          ['Hash', r.hash],
          ['Prev hash', r.prev_hash],
        ].flatMap(([k, v]) => [h('dt', {}, k), h('dd', { class: k.includes('ash') || k === 'Key id' ? 'mono' : '' }, v)]),
      ),
      h('h3', {}, 'Data (unredacted)'),
      h('pre', { tabindex: '0', 'aria-label': 'Record data as JSON' }, JSON.stringify(r.data, null, 2)),
    );
  };
  const load = async () => {
    more.disabled = true;
    const q = { limit: 50, order: 'desc', after: after ?? undefined };
    for (const [k, v] of Object.entries(filters)) if (v) q[k] = v;
    const page = await api.get('/v1/admin/audit', q);
    for (const r of page.data) {
      const row = h(
        'tr',
        { 'aria-selected': 'false', onclick: () => select(row, r) },
        h('td', {}, h('button', { class: 'btn btn-ghost btn-sm mono', type: 'button', 'aria-label': `Show record ${r.seq}`, onclick: (e) => (e.stopPropagation(), select(row, r)) }, `#${r.seq}`)),
        h('td', { title: r.occurred_at }, fmtClock(r.occurred_at)),
        h('td', {}, r.actor_subject_id ?? '–', r.actor_role ? h('span', { class: 'muted small' }, ` · ${r.actor_role}`) : null),
        h('td', { class: 'mono' }, r.action),
        h('td', { class: 'mono small', title: r.resource_id ?? '' }, shortId(r.resource_id ?? r.run_id ?? '–')),
        h('td', {}, r.outcome === 'ok' || r.outcome === null ? chip('ok') : chip(r.outcome, 'chip-bad')),
      );
      tbody.append(row);
    }
    total += page.data.length;
    after = page.last_id;
    more.hidden = !page.has_more;
    more.disabled = false;
    count.textContent = total ? `${total} record${total === 1 ? '' : 's'} shown${page.has_more ? ' (more available)' : ''}` : 'No records match these filters.';
  };
  more.onclick = () => load().catch((e) => toast(describeError(e), true));

  setPage(
    'Audit',
    h('div', { class: 'page-head' }, h('div', {}, h('h1', {}, 'Audit trail'), h('p', {}, 'Every state-changing request and run event, hash-chained per tenant.')), h(
        'div',
        { class: 'row', style: 'align-items:center' },
        badge,
        signed,
        h('button', { class: 'btn btn-sm', type: 'button', onclick: verify }, 'Verify again'),
        h('button', { class: 'btn btn-sm', type: 'button', id: 'audit-export', title: 'Download the whole trail with its hashes and signed checkpoints (ndjson)', onclick: () => exportTrail('ndjson') }, 'Export'),
        h('button', { class: 'btn btn-sm btn-ghost', type: 'button', title: 'The same as CSV, for a SIEM or a spreadsheet', onclick: () => exportTrail('csv') }, 'CSV'),
      ),
    ),
    form,
    h(
      'div',
      { class: 'audit-layout' },
      h('section', { class: 'panel', style: 'padding:0', 'aria-label': 'Audit records' }, h('div', { class: 'table-wrap' }, h('table', { class: 'audit-table' }, h('caption', { class: 'visually-hidden' }, 'Audit records, newest first'), h('thead', {}, h('tr', {}, ...['#', 'Time', 'Actor', 'Action', 'Resource', 'Outcome'].map((t) => h('th', { scope: 'col' }, t)))), tbody)), h('div', { style: 'padding:12px 16px', class: 'row' }, count, more)),
      detail,
    ),
  );
  await Promise.all([verify(), load(), showCheckpoint()]);
}

// ---------- webhooks (admin)
/** A run's usage in one line: tokens (cached / reasoning when any) and the estimated cost. */
function usageText(u) {
  const extra = [u.cached_input_tokens ? `${u.cached_input_tokens} cached` : '', u.reasoning_tokens ? `${u.reasoning_tokens} reasoning` : ''].filter(Boolean).join(', ');
  const cost = u.estimated_cost ? ` · ~${u.estimated_cost.amount} ${u.estimated_cost.currency}` : '';
  return `${u.input_tokens} in / ${u.output_tokens} out tokens${extra ? ` (${extra})` : ''}${cost}`;
}

const WEBHOOK_EVENTS = ['run.completed', 'run.failed', 'run.cancelled', 'run.expired', 'run.terminated', 'run.requires_action', 'attachment.ready', 'attachment.rejected'];

async function renderWebhooks(params) {
  const api = state.api;
  if (state.role !== 'admin') {
    setPage('Webhooks', h('section', { class: 'panel' }, h('h1', {}, 'Webhooks'), h('p', {}, 'Webhook endpoints are for admin keys only.')));
    return;
  }
  const selected = params.get('id') || '';
  const endpoints = await api.get('/v1/webhooks', { limit: 100 });

  const rows = endpoints.data.map((w) =>
    h(
      'tr',
      { 'aria-selected': String(w.id === selected), dataset: { id: w.id } },
      h('td', {}, h('a', { href: `#/webhooks?id=${encodeURIComponent(w.id)}`, class: 'mono small', 'aria-label': `Deliveries of ${w.url}` }, w.url), w.description ? h('div', { class: 'muted small' }, w.description) : null, h('div', { class: 'muted small mono' }, w.id)),
      h('td', { class: 'small' }, w.events.join(', ')),
      h('td', {}, chip(w.enabled ? 'active' : 'disabled')),
      h('td', { class: 'small' }, fmtTime(w.created_at)),
    ),
  );
  const table = endpoints.data.length
    ? h('div', { class: 'table-wrap' }, h('table', { class: 'webhooks-table' }, h('caption', { class: 'visually-hidden' }, "The tenant's webhook endpoints"), h('thead', {}, h('tr', {}, ...['Endpoint', 'Events', 'Status', 'Created'].map((t) => h('th', { scope: 'col' }, t)))), h('tbody', {}, rows)))
    : h('p', { class: 'empty' }, 'No webhook endpoints yet. Create one to be notified when runs finish or need a human.');

  // Recent deliveries of the selected endpoint.
  const deliveries = h('section', { class: 'panel detail', id: 'webhook-deliveries', 'aria-label': 'Recent deliveries', 'aria-live': 'polite' });
  const current = endpoints.data.find((w) => w.id === selected);
  if (!current) {
    deliveries.append(h('h2', {}, 'Recent deliveries'), h('p', { class: 'muted' }, 'Select an endpoint to see its recent deliveries.'));
  } else {
    const log = await api.get(`/v1/webhooks/${encodeURIComponent(current.id)}/deliveries`, { limit: 50 });
    const body = log.data.map((d) =>
      h(
        'tr',
        {},
        h('td', { class: 'mono small' }, d.type),
        h('td', { class: 'mono small', title: d.object_id }, shortId(d.object_id)),
        h('td', {}, chip(d.status)),
        h('td', { class: 'small' }, String(d.attempts)),
        h('td', { class: 'small' }, d.last_response_status === null ? (d.last_error ?? '–') : `HTTP ${d.last_response_status}`),
        h('td', { class: 'small', title: d.next_attempt_at ?? '' }, d.status === 'pending' ? fmtClock(d.next_attempt_at) : fmtClock(d.delivered_at ?? d.created_at)),
      ),
    );
    deliveries.append(
      h('h2', {}, 'Recent deliveries'),
      h('p', { class: 'muted small mono' }, current.url),
      log.data.length
        ? h('div', { class: 'table-wrap' }, h('table', { class: 'deliveries-table' }, h('caption', { class: 'visually-hidden' }, 'Deliveries, newest first'), h('thead', {}, h('tr', {}, ...['Event', 'Object', 'Status', 'Attempts', 'Last answer', 'Next / done'].map((t) => h('th', { scope: 'col' }, t)))), h('tbody', {}, body)))
        : h('p', { class: 'empty' }, 'No deliveries yet.'),
    );
  }

  // Create: the secret is shown once.
  const url = h('input', { id: 'wh-url', type: 'url', name: 'url', required: true, placeholder: 'https://hooks.example.com/agent-api', autocomplete: 'off', 'aria-describedby': 'wh-url-hint' });
  const description = h('input', { id: 'wh-description', type: 'text', name: 'description', maxlength: 500, autocomplete: 'off' });
  const boxes = WEBHOOK_EVENTS.map((e) => h('label', { class: 'check small' }, h('input', { type: 'checkbox', name: 'events', value: e, checked: e.startsWith('run.') }), ` ${e}`));
  const err = h('p', { class: 'error-text', role: 'alert' });
  const secretBox = h('div', { id: 'webhook-secret', 'aria-live': 'polite' });
  const fresh = state.freshSecret;
  state.freshSecret = null;
  if (fresh && fresh.id === selected) {
    secretBox.append(
      h(
        'div',
        { class: 'panel secret-once', role: 'status' },
        h('strong', {}, 'Signing secret (shown only now): '),
        h('code', { class: 'mono', id: 'webhook-secret-value' }, fresh.secret),
        h('p', { class: 'muted small' }, 'Verify deliveries with it (Standard Webhooks: see docs/webhooks.md). Rotate it through the API if it leaks.'),
      ),
    );
  }
  const form = h(
    'form',
    {
      class: 'stack',
      onsubmit: async (e) => {
        e.preventDefault();
        err.textContent = '';
        const events = boxes.map((b) => b.querySelector('input')).filter((i) => i.checked).map((i) => i.value);
        if (!events.length) {
          err.textContent = 'Choose at least one event.';
          return;
        }
        try {
          const body = { url: url.value.trim(), events };
          if (description.value.trim()) body.description = description.value.trim();
          const w = await api.post('/v1/webhooks', body);
          // Shown once, by the next render of this page (the secret is never readable again).
          state.freshSecret = { id: w.id, secret: w.secret };
          const target = `#/webhooks?id=${encodeURIComponent(w.id)}`;
          if (location.hash === target) await route();
          else location.hash = target;
        } catch (e2) {
          err.textContent = describeError(e2);
        }
      },
    },
    h('div', {}, h('label', { for: 'wh-url' }, 'URL'), url, h('p', { class: 'hint', id: 'wh-url-hint' }, 'Must start with an entry of OUTBOUND_URL_ALLOWLIST.')),
    h('fieldset', { class: 'stack' }, h('legend', {}, 'Events'), ...boxes),
    h('div', {}, h('label', { for: 'wh-description' }, 'Description ', h('span', { class: 'muted' }, '(optional)')), description),
    err,
    h('button', { class: 'btn btn-primary', type: 'submit' }, 'Create endpoint'),
  );

  setListPage(
    'Webhooks',
    'Signed notifications when runs finish or need a human, and when attachments are scanned.',
    h('div', { class: 'stack' }, h('section', { class: 'panel', style: 'padding:0', 'aria-label': 'Webhook endpoints' }, table), deliveries),
    'new-webhook-title',
    'New endpoint',
    form,
    secretBox,
  );
}

// ---------- secrets (admin): names and versions only; a value is typed once and never shown
const SECRET_NAME = /^[A-Z][A-Z0-9_]{0,63}$/;

async function renderSecrets() {
  const api = state.api;
  if (state.role !== 'admin') {
    setPage('Secrets', h('section', { class: 'panel' }, h('h1', {}, 'Secrets'), h('p', {}, 'Secrets are for admin keys only.')));
    return;
  }
  const secrets = await api.get('/v1/secrets', { limit: 100 });

  const name = h('input', { id: 'secret-name', type: 'text', name: 'name', required: true, maxlength: 64, pattern: SECRET_NAME.source.slice(1, -1), placeholder: 'CRM_API_TOKEN', autocomplete: 'off', spellcheck: 'false', class: 'mono', 'aria-describedby': 'secret-name-hint' });
  // Write-only: a password field, never filled from the API (which has no value to give), cleared after every submit.
  const value = h('input', { id: 'secret-value', type: 'password', name: 'value', required: true, autocomplete: 'new-password', 'aria-describedby': 'secret-value-hint' });
  const err = h('p', { class: 'error-text', role: 'alert' });
  const rotate = (s) => {
    name.value = s.name;
    value.value = '';
    value.focus();
  };
  const remove = async (s) => {
    if (!confirm(`Delete secret ${s.name}? Tools that name \${secret:${s.name}} fail until it is set again.`)) return;
    try {
      await api.del(`/v1/secrets/${encodeURIComponent(s.name)}`);
      toast(`Deleted secret ${s.name}.`);
      await route();
    } catch (e) {
      toast(describeError(e), true);
    }
  };

  const rows = secrets.data.map((s) =>
    h(
      'tr',
      { dataset: { name: s.name } },
      h('td', { class: 'mono small' }, s.name),
      h('td', { class: 'small' }, String(s.version)),
      h('td', { class: 'small', title: s.updated_at }, fmtTime(s.updated_at)),
      h(
        'td',
        { class: 'row-actions' },
        h('button', { type: 'button', class: 'btn btn-sm', 'aria-label': `Rotate ${s.name}`, onclick: () => rotate(s) }, 'Rotate'),
        h('button', { type: 'button', class: 'btn btn-sm btn-bad', 'aria-label': `Delete ${s.name}`, onclick: () => remove(s) }, 'Delete'),
      ),
    ),
  );
  const table = secrets.data.length
    ? h('div', { class: 'table-wrap' }, h('table', { class: 'secrets-table' }, h('caption', { class: 'visually-hidden' }, "The tenant's secrets (values are never shown)"), h('thead', {}, h('tr', {}, ...['Name', 'Version', 'Updated', ''].map((t) => h('th', { scope: 'col' }, t)))), h('tbody', {}, rows)))
    : h('p', { class: 'empty' }, 'No secrets yet. Set one for the http and mcp tools whose headers name it as ${secret:NAME}.');

  const form = h(
    'form',
    {
      class: 'stack',
      onsubmit: async (e) => {
        e.preventDefault();
        err.textContent = '';
        const n = name.value.trim();
        const v = value.value;
        // Cleared at once, whatever the answer: the value lives in the field only until it is sent.
        value.value = '';
        if (!SECRET_NAME.test(n)) {
          err.textContent = 'The name must be an upper-case letter, then up to 63 upper-case letters, digits or _.';
          return;
        }
        if (!v) {
          err.textContent = 'Type the value.';
          return;
        }
        try {
          const s = await api.put(`/v1/secrets/${encodeURIComponent(n)}`, { value: v });
          name.value = '';
          toast(`${s.version === 1 ? 'Set' : 'Rotated'} secret ${s.name} (version ${s.version}).`);
          await route();
        } catch (e2) {
          err.textContent = describeError(e2);
        }
      },
    },
    h('div', {}, h('label', { for: 'secret-name' }, 'Name'), name, h('p', { class: 'hint', id: 'secret-name-hint' }, 'Upper-case letters, digits and _; an existing name is rotated (its next version).')),
    h('div', {}, h('label', { for: 'secret-value' }, 'Value'), value, h('p', { class: 'hint', id: 'secret-value-hint' }, 'Write-only: stored encrypted, never shown again (here or by the API). At most 8 KiB.')),
    err,
    h('button', { class: 'btn btn-primary', type: 'submit' }, 'Save secret'),
  );

  setListPage(
    'Secrets',
    'Values for the headers of http and mcp tools (${secret:NAME}), per tenant. Names and versions are listed; values never leave the service except in those tool calls.',
    h('section', { class: 'panel', style: 'padding:0', 'aria-label': 'Secrets' }, table),
    'set-secret-title',
    'Set or rotate a secret',
    form,
  );
}

// ---------- automations: schedules that deliver input (members their own, admins the tenant's)
function scheduleText(a) {
  return a.schedule.type === 'cron' ? `cron ${a.schedule.expression} (${a.schedule.timezone})` : `once at ${fmtTime(a.schedule.at)}`;
}

async function renderAutomations() {
  const api = state.api;
  const [autos, agents] = await Promise.all([api.get('/v1/automations', { limit: 100 }), api.get('/v1/agents', { limit: 100 }).catch(() => ({ data: [] }))]);
  const act = async (a, what) => {
    try {
      if (what === 'run') {
        const inv = await api.post(`/v1/automations/${a.id}/invocations`);
        toast(`Queued ${inv.id}: it runs now.`);
      } else {
        await api.post(`/v1/automations/${a.id}/${what}`);
        toast(`${what === 'pause' ? 'Paused' : 'Resumed'} ${a.name}.`);
      }
      await route();
    } catch (e) {
      toast(describeError(e), true);
    }
  };
  const last = (a) => {
    const i = a.last_invocation;
    if (!i) return '–';
    const parts = [chip(i.status), h('div', { class: 'small' }, fmtTime(i.created_at))];
    if (i.session_id && i.run_id) parts.push(' · ', h('a', { href: `#/sessions/${encodeURIComponent(i.session_id)}`, class: 'mono small', title: i.run_id }, shortId(i.run_id)));
    if (i.error) parts.push(' · ', h('span', { class: 'small' }, i.error.code));
    return h('span', {}, ...parts);
  };
  const rows = autos.data.map((a) =>
    h(
      'tr',
      { dataset: { id: a.id } },
      h('td', {}, a.name, h('div', { class: 'mono small', title: a.id }, shortId(a.id))),
      h('td', { class: 'small' }, scheduleText(a)),
      h('td', { class: 'small' }, a.target.type === 'session' ? h('a', { href: `#/sessions/${encodeURIComponent(a.target.session_id)}`, class: 'mono', title: a.target.session_id }, shortId(a.target.session_id)) : `new session of ${a.target.agent_id}`),
      h('td', {}, chip(a.status)),
      h('td', { class: 'small', title: a.next_run_at || '' }, fmtTime(a.next_run_at)),
      h('td', { class: 'small' }, last(a)),
      h(
        'td',
        { class: 'row-actions' },
        a.status === 'active'
          ? h('button', { type: 'button', class: 'btn btn-sm', 'aria-label': `Pause ${a.name}`, onclick: () => act(a, 'pause') }, 'Pause')
          : a.status === 'paused'
            ? h('button', { type: 'button', class: 'btn btn-sm', 'aria-label': `Resume ${a.name}`, onclick: () => act(a, 'resume') }, 'Resume')
            : '',
        h('button', { type: 'button', class: 'btn btn-sm', 'aria-label': `Run ${a.name} now`, onclick: () => act(a, 'run') }, 'Run now'),
      ),
    ),
  );
  const table = autos.data.length
    ? h('div', { class: 'table-wrap' }, h('table', { class: 'automations-table' }, h('caption', { class: 'visually-hidden' }, 'Automations'), h('thead', {}, h('tr', {}, ...['Name', 'Schedule', 'Target', 'Status', 'Next run', 'Last invocation', ''].map((t) => h('th', { scope: 'col' }, t)))), h('tbody', {}, rows)))
    : h('p', { class: 'empty' }, 'No automations yet. Create one: a cron schedule in a time zone, or once at a time.');

  const name = h('input', { id: 'auto-name', type: 'text', required: true, maxlength: 200, placeholder: 'Morning digest' });
  const kind = h('select', { id: 'auto-kind' }, h('option', { value: 'cron' }, 'Cron schedule'), h('option', { value: 'once' }, 'Once'));
  const expression = h('input', { id: 'auto-cron', type: 'text', value: '0 9 * * 1-5', class: 'mono', 'aria-describedby': 'auto-cron-hint' });
  const tz = h('input', { id: 'auto-tz', type: 'text', value: Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC' });
  const at = h('input', { id: 'auto-at', type: 'datetime-local' });
  const agent = h('select', { id: 'auto-agent' }, ...agents.data.map((a) => h('option', { value: a.id }, a.id)));
  const text = h('textarea', { id: 'auto-input', required: true, rows: 3, placeholder: 'Summarise the open tickets.' });
  const err = h('p', { class: 'error-text', role: 'alert' });
  const cronBox = h('div', {}, h('label', { for: 'auto-cron' }, 'Cron (minute hour day month weekday)'), expression, h('p', { class: 'hint', id: 'auto-cron-hint' }, 'Five fields, e.g. 0 9 * * 1-5 = weekdays at 09:00.'), h('label', { for: 'auto-tz' }, 'Time zone (IANA)'), tz);
  const onceBox = h('div', { hidden: true }, h('label', { for: 'auto-at' }, 'At (your local time)'), at);
  kind.addEventListener('change', () => {
    cronBox.hidden = kind.value !== 'cron';
    onceBox.hidden = kind.value !== 'once';
  });
  const form = h(
    'form',
    {
      class: 'stack',
      onsubmit: async (e) => {
        e.preventDefault();
        err.textContent = '';
        const schedule = kind.value === 'cron' ? { type: 'cron', expression: expression.value.trim(), timezone: tz.value.trim() } : { type: 'once', at: at.value ? new Date(at.value).toISOString() : '' };
        try {
          const a = await api.post('/v1/automations', { name: name.value.trim(), schedule, target: { type: 'new_session', agent_id: agent.value }, input: { role: 'user', content: [{ type: 'text', text: text.value }] } });
          toast(`Created ${a.name}: next run ${fmtTime(a.next_run_at)}.`);
          await route();
        } catch (e2) {
          err.textContent = describeError(e2);
        }
      },
    },
    h('div', {}, h('label', { for: 'auto-name' }, 'Name'), name),
    h('div', {}, h('label', { for: 'auto-kind' }, 'When'), kind),
    cronBox,
    onceBox,
    h('div', {}, h('label', { for: 'auto-agent' }, 'Agent (a new session each time)'), agent),
    h('div', {}, h('label', { for: 'auto-input' }, 'Input'), text),
    err,
    h('button', { class: 'btn btn-primary', type: 'submit' }, 'Create automation'),
  );
  setListPage(
    'Automations',
    'Input delivered on a schedule: each slot fires once, into a new session of an agent or into one of your sessions.',
    h('section', { class: 'panel', style: 'padding:0', 'aria-label': 'Automations' }, table),
    'new-auto-title',
    'New automation',
    form,
  );
}

// ---------- router
async function route() {
  if (!state.api) return renderKeyView();
  const hash = location.hash || '#/sessions';
  const [path, query = ''] = hash.slice(1).split('?');
  const parts = path.split('/').filter(Boolean);
  for (const a of document.querySelectorAll('[data-nav]')) a.toggleAttribute('aria-current', false);
  const current = document.querySelector(`[data-nav="${parts[0] || 'sessions'}"]`);
  if (current) current.setAttribute('aria-current', 'page');
  stopLive();
  try {
    if (parts[0] === 'audit') await renderAudit(new URLSearchParams(query));
    else if (parts[0] === 'webhooks') await renderWebhooks(new URLSearchParams(query));
    else if (parts[0] === 'secrets') await renderSecrets();
    else if (parts[0] === 'automations') await renderAutomations();
    else if (parts[0] === 'sessions' && parts[1]) await renderSession(decodeURIComponent(parts[1]));
    else await renderSessions();
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) return signOut();
    setPage('Error', h('section', { class: 'panel', role: 'alert' }, h('h1', {}, 'Something went wrong'), h('p', {}, describeError(err)), h('p', {}, h('a', { href: '#/sessions' }, 'Back to sessions'))));
  }
}

document.getElementById('sign-out').addEventListener('click', signOut);
window.addEventListener('hashchange', () => {
  route();
  main.focus({ preventScroll: true });
});

(async () => {
  const saved = sessionStorage.getItem(KEY_STORAGE);
  if (!saved) return renderKeyView();
  try {
    await signIn(saved);
  } catch (err) {
    sessionStorage.removeItem(KEY_STORAGE);
    return renderKeyView(err instanceof ApiError && err.status === 401 ? 'The saved key is no longer valid.' : describeError(err));
  }
  await route();
})();
