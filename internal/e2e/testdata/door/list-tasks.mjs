// Sends <n> messages to a Murmur door with @a2a-js/sdk, then pages through
// ListTasks two at a time and lists the completed tasks; prints what the
// client saw as one JSON object. Usage: node list-tasks.mjs <door URL> <n>
// (the Go test TestDoorA2AConformance runs it against a real mur).
import { randomUUID } from 'node:crypto';
import { ClientFactory } from '@a2a-js/sdk/client';
import { Role, TaskState, taskStateToJSON } from '@a2a-js/sdk';

const [url, n] = [process.argv[2], Number(process.argv[3])];
const client = await new ClientFactory().createFromUrl(url);

const sent = [];
for (let i = 0; i < n; i++) {
  const t = await client.sendMessage({
    tenant: '', metadata: undefined, configuration: undefined,
    message: {
      messageId: randomUUID(), contextId: '', taskId: '', role: Role.ROLE_USER,
      parts: [{ content: { $case: 'text', value: `task ${i}` }, metadata: undefined }],
      metadata: undefined, extensions: [], referenceTaskIds: [],
    },
  });
  sent.push({ id: t.id, state: taskStateToJSON(t.status.state) });
}

const listReq = (over) => ({ tenant: '', contextId: '', status: TaskState.TASK_STATE_UNSPECIFIED, pageToken: '', statusTimestampAfter: undefined, ...over });
const pages = [];
let token = '';
for (let i = 0; i < 50; i++) {
  const page = await client.listTasks(listReq({ pageSize: 2, pageToken: token }));
  pages.push({ ids: page.tasks.map((t) => t.id), states: page.tasks.map((t) => taskStateToJSON(t.status.state)), totalSize: page.totalSize, pageSize: page.pageSize });
  token = page.nextPageToken;
  if (!token) break;
}
const completed = await client.listTasks(listReq({ status: TaskState.TASK_STATE_COMPLETED }));
process.stdout.write(JSON.stringify({ sent, pages, completed: completed.tasks.map((t) => t.id) }) + '\n');
