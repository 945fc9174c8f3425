// Answers an operator's approval request with @a2a-js/sdk (a client we did not
// write): sends a task, which the door returns in INPUT_REQUIRED with the
// request's text and data parts, then replies with the given answer naming the
// task, and prints, as one JSON object on stdout, what the client saw.
// Usage: node approve.mjs <door URL> <answer>
import { randomUUID } from 'node:crypto';
import { ClientFactory } from '@a2a-js/sdk/client';
import { Role, taskStateToJSON } from '@a2a-js/sdk';

const [url, answer] = process.argv.slice(2);
const client = await new ClientFactory().createFromUrl(url);
const msg = (text, taskId) => ({
  messageId: randomUUID(), contextId: '', taskId, role: Role.ROLE_USER,
  parts: [{ content: { $case: 'text', value: text }, metadata: undefined }],
  metadata: undefined, extensions: [], referenceTaskIds: [],
});
const send = (text, taskId) => client.sendMessage({ tenant: '', message: msg(text, taskId), metadata: undefined, configuration: undefined });
const view = (t) => ({
  id: t.id, state: taskStateToJSON(t.status.state),
  parts: (t.status.message?.parts ?? []).map((p) => ({ case: p.content?.$case, value: p.content?.value })),
  artifacts: Object.fromEntries((t.artifacts ?? []).map((a) => [a.artifactId, a.parts.map((p) => p.content?.value).join('')])),
});

const out = {};
const waiting = await send('list the work folder', '');
out.waiting = view(waiting);
out.answered = view(await send(answer, waiting.id));
console.log(JSON.stringify(out));
