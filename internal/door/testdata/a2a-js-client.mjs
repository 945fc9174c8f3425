// Drives a Murmur door with @a2a-js/sdk (a client we did not write) and
// prints, as one JSON object on stdout, what the client saw of each task.
// Usage: node a2a-js-client.mjs <door URL>   (run from the repository root's
// node_modules reach; the Go test TestA2AJSClient runs it).
import { randomUUID } from 'node:crypto';
import { ClientFactory } from '@a2a-js/sdk/client';
import { Role, TaskState, taskStateToJSON } from '@a2a-js/sdk';

const url = process.argv[2];
const factory = new ClientFactory();
const client = await factory.createFromUrl(url);

const msg = (text) => ({
  messageId: randomUUID(), contextId: '', taskId: '', role: Role.ROLE_USER,
  parts: [{ content: { $case: 'text', value: text }, metadata: undefined }],
  metadata: undefined, extensions: [], referenceTaskIds: [],
});
const send = (text, returnImmediately) => client.sendMessage({
  tenant: '', message: msg(text), metadata: undefined,
  configuration: returnImmediately ? { acceptedOutputModes: [], returnImmediately: true } : undefined,
});
const view = (t) => ({
  id: t.id, contextId: t.contextId, state: taskStateToJSON(t.status.state),
  status: t.status.message?.parts?.[0]?.content?.value ?? '',
  artifacts: (t.artifacts ?? []).map((a) => ({
    id: a.artifactId, name: a.name,
    parts: a.parts.map((p) => p.content?.$case === 'data' ? { data: p.content.value } : { text: p.content?.value }),
  })),
});

const out = {};
const card = await client.getAgentCard();
out.card = { name: card.name, description: card.description, version: card.version, skills: card.skills.map((s) => s.id) };

out.blocking = view(await send('echo from js', false));

const started = await send('block', true);
out.nonBlocking = view(started);
out.get = view(await client.getTask({ tenant: '', id: started.id }));
out.cancel = view(await client.cancelTask({ tenant: '', id: started.id, metadata: undefined }));
try {
  await client.cancelTask({ tenant: '', id: started.id, metadata: undefined });
  out.cancelAgain = 'accepted';
} catch (e) {
  out.cancelAgain = String(e?.message ?? e);
}

const events = [];
let streamedId = '';
for await (const ev of client.sendMessageStream({ tenant: '', message: msg('echo streamed words'), metadata: undefined, configuration: undefined })) {
  const p = ev.payload ?? ev;
  const kind = p.$case ?? (ev.kind ?? 'unknown');
  const v = p.value ?? ev;
  if (kind === 'task') { streamedId = v.id; events.push(`task:${taskStateToJSON(v.status.state)}`); }
  else if (kind === 'statusUpdate') events.push(`status:${taskStateToJSON(v.status.state)}`);
  else if (kind === 'artifactUpdate') events.push(`artifact:${v.artifact.artifactId}:${v.append ? 'append' : 'set'}:${v.artifact.parts[0]?.content?.value}`);
  else events.push(kind);
}
out.stream = { events, task: view(await client.getTask({ tenant: '', id: streamedId })) };

// ListTasks: every task, two a page, then the completed ones in the stream's
// context.
const listReq = (over) => ({ tenant: '', contextId: '', status: TaskState.TASK_STATE_UNSPECIFIED, pageToken: '', statusTimestampAfter: undefined, ...over });
out.list = { pages: [], ids: [] };
let token = '';
for (let i = 0; i < 20; i++) {
  const page = await client.listTasks(listReq({ pageSize: 2, pageToken: token }));
  out.list.pages.push({ n: page.tasks.length, totalSize: page.totalSize, pageSize: page.pageSize });
  out.list.ids.push(...page.tasks.map((t) => t.id));
  token = page.nextPageToken;
  if (!token) break;
}
const done = await client.listTasks(listReq({ contextId: out.stream.task.contextId, status: TaskState.TASK_STATE_COMPLETED, includeArtifacts: true }));
out.list.completedInContext = done.tasks.map(view);

process.stdout.write(JSON.stringify(out) + '\n');
