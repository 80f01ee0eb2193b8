import { GenericContainer, getContainerRuntimeClient, type StartedTestContainer, Wait } from "testcontainers";

export interface Containers {
  postgresUrl: string | null;
  eventStoreUrl: string | null;
  reason: string;
  stop(): Promise<void>;
}

async function runtimeAvailable(): Promise<string | null> {
  try {
    await getContainerRuntimeClient();
    return null;
  } catch {
    return "no container runtime for testcontainers";
  }
}

/** Starts the servers that no variable names, when a container runtime exists. */
export async function startContainers(wanted: {
  postgres: boolean;
  eventStore: boolean;
}): Promise<Containers> {
  const started: StartedTestContainer[] = [];
  const stop = async () => {
    await Promise.all(started.map((container) => container.stop()));
  };
  if (!wanted.postgres && !wanted.eventStore)
    return { postgresUrl: null, eventStoreUrl: null, reason: "", stop };
  const unavailable = await runtimeAvailable();
  if (unavailable) return { postgresUrl: null, eventStoreUrl: null, reason: unavailable, stop };

  let postgresUrl: string | null = null;
  let eventStoreUrl: string | null = null;
  if (wanted.postgres) {
    const postgres = await new GenericContainer("postgres:17")
      .withEnvironment({ POSTGRES_HOST_AUTH_METHOD: "trust" })
      .withExposedPorts(5432)
      .withWaitStrategy(Wait.forLogMessage(/database system is ready to accept connections/, 2))
      .start();
    started.push(postgres);
    postgresUrl = `postgres://postgres@${postgres.getHost()}:${postgres.getMappedPort(5432)}/postgres`;
  }
  if (wanted.eventStore) {
    const kurrent = await new GenericContainer("docker.kurrent.io/kurrent-latest/kurrentdb:25.1")
      .withEnvironment({ KURRENTDB_INSECURE: "true", KURRENTDB_RUN_PROJECTIONS: "None" })
      .withExposedPorts(2113)
      .withWaitStrategy(Wait.forHttp("/health/live", 2113))
      .start();
    started.push(kurrent);
    eventStoreUrl = `kurrentdb://${kurrent.getHost()}:${kurrent.getMappedPort(2113)}?tls=false`;
  }
  return { postgresUrl, eventStoreUrl, reason: "", stop };
}
