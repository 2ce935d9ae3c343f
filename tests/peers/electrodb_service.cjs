// An ElectroDB service written and read by ElectroDB itself, for lsiorm's adoption tests.
//
//   node electrodb_service.cjs write ENDPOINT TABLE   create TABLE, write the service's items,
//                                                     print them (as ElectroDB returned them)
//   node electrodb_service.cjs read ENDPOINT TABLE    print every entity's items, read back by
//                                                     ElectroDB, and one collection query
//   node electrodb_service.cjs get ENDPOINT TABLE NAMES   print what ElectroDB's get finds for
//                                                     each employee of the JSON list NAMES
//
// The service keeps ElectroDB's defaults: keys lowercased, "$service#attribute_value"
// partition keys, "$entity_version#attribute_value" sort keys, and "$collection#..." sort keys
// on the index a collection shares. Values hold the key separator "#" and mixed case.
// Needs the packages `make electrodb` installs (NODE_PATH names their node_modules).
"use strict";

const { DynamoDBClient, CreateTableCommand, waitUntilTableExists } = require("@aws-sdk/client-dynamodb");
const { Entity, Service } = require("electrodb");

function service(client, table) {
  const Employee = new Entity(
    {
      model: { entity: "employee", version: "1", service: "taskapp" },
      attributes: {
        employee: { type: "string", required: true },
        name: { type: "string", required: true },
        office: { type: "string" },
      },
      indexes: {
        byId: { pk: { field: "pk", composite: ["employee"] }, sk: { field: "sk", composite: [] } },
        assignments: {
          collection: "assignments",
          index: "gsi1",
          pk: { field: "gsi1pk", composite: ["employee"] },
          sk: { field: "gsi1sk", composite: [] },
        },
      },
    },
    { table, client },
  );
  const Task = new Entity(
    {
      model: { entity: "task", version: "1", service: "taskapp" },
      attributes: {
        taskId: { type: "string", required: true },
        project: { type: "string", required: true },
        employee: { type: "string" },
        status: { type: ["open", "closed"], required: true },
        points: { type: "number", required: true },
        due: { type: "string" },
      },
      indexes: {
        byProject: {
          pk: { field: "pk", composite: ["project"] },
          sk: { field: "sk", composite: ["taskId"] },
        },
        assigned: {
          collection: "assignments",
          index: "gsi1",
          pk: { field: "gsi1pk", composite: ["employee"] },
          sk: { field: "gsi1sk", composite: ["status", "points"] },
        },
        byStatus: {
          index: "gsi2",
          pk: { field: "gsi2pk", composite: ["project", "status"] },
          sk: { field: "gsi2sk", composite: ["taskId"] },
        },
      },
    },
    { table, client },
  );
  return new Service({ employee: Employee, task: Task });
}

const EMPLOYEES = [
  { employee: "Ann", name: "Ann Smith", office: "Oslo" },
  { employee: "bob", name: "Bob Jones", office: "Rome" },
  { employee: "CAROL", name: "Carol Diaz" },
];

function tasks() {
  const projects = ["Web#Site", "web#SITE", "Api", "api#v2"];
  const statuses = ["open", "closed"];
  const out = [];
  for (let n = 1; n <= 24; n++) {
    const task = {
      taskId: `T-${n}`,
      project: projects[n % projects.length],
      status: statuses[(n * 7) % 3 === 0 ? 1 : 0],
      points: (n * 5) % 13, // unpadded, repeating: 0..12
    };
    if (n % 4 !== 0) task.employee = EMPLOYEES[n % EMPLOYEES.length].employee;
    if (n % 3 === 0) task.due = `2024-05-${String(n).padStart(2, "0")}T10:00:00.000Z`;
    out.push(task);
  }
  return out;
}

async function createTable(client, table) {
  const S = (name) => ({ AttributeName: name, AttributeType: "S" });
  const gsi = (name, pk, sk) => ({
    IndexName: name,
    KeySchema: [
      { AttributeName: pk, KeyType: "HASH" },
      { AttributeName: sk, KeyType: "RANGE" },
    ],
    Projection: { ProjectionType: "ALL" },
  });
  await client.send(
    new CreateTableCommand({
      TableName: table,
      BillingMode: "PAY_PER_REQUEST",
      AttributeDefinitions: ["pk", "sk", "gsi1pk", "gsi1sk", "gsi2pk", "gsi2sk"].map(S),
      KeySchema: [
        { AttributeName: "pk", KeyType: "HASH" },
        { AttributeName: "sk", KeyType: "RANGE" },
      ],
      GlobalSecondaryIndexes: [gsi("gsi1", "gsi1pk", "gsi1sk"), gsi("gsi2", "gsi2pk", "gsi2sk")],
    }),
  );
  await waitUntilTableExists({ client, maxWaitTime: 60 }, { TableName: table });
}

async function main() {
  const [mode, endpoint, table] = process.argv.slice(2);
  if (!["write", "read", "get"].includes(mode) || !endpoint || !table) {
    process.stderr.write("usage: electrodb_service.cjs write|read|get ENDPOINT TABLE [NAMES]\n");
    process.exit(2);
  }
  const client = new DynamoDBClient({
    endpoint,
    region: "us-east-1",
    credentials: { accessKeyId: "testing", secretAccessKey: "testing" },
  });
  const app = service(client, table);
  const { employee: Employee, task: Task } = app.entities;
  if (mode === "write") {
    await createTable(client, table);
    const written = { employee: [], task: [] };
    for (const e of EMPLOYEES) written.employee.push((await Employee.put(e).go()).data);
    for (const t of tasks()) written.task.push((await Task.put(t).go()).data);
    process.stdout.write(JSON.stringify(written));
    return;
  }
  if (mode === "get") {
    const found = {};
    for (const employee of JSON.parse(process.argv[5])) {
      found[employee] = (await Employee.get({ employee }).go()).data;
    }
    process.stdout.write(JSON.stringify(found));
    return;
  }
  const read = {
    employee: (await Employee.scan.go({ pages: "all" })).data,
    task: (await Task.scan.go({ pages: "all" })).data,
    assignments: (await app.collections.assignments({ employee: "Ann" }).go({ pages: "all" })).data,
  };
  process.stdout.write(JSON.stringify(read));
}

main().catch((error) => {
  process.stderr.write(`${error.stack || error}\n`);
  process.exit(1);
});
