/**
 * A real MQTT broker for a test: Debian's `mosquitto` (`apt-get install mosquitto`, as .ci/run
 * does; MOSQUITTO_PATH overrides where it is), on a free local port, with persistence in a temp
 * dir so a persistent subscriber's session and queued messages survive a broker restart
 * (mosquitto.conf(5): `persistence`, `persistence_location`).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { requireProgram } from './host-program.js';
import { tempDataDir } from './store-server.js';
import { freePort, until } from './waiting.js';

export interface Broker {
  url: string;
  /** Stops the broker (SIGTERM: it saves its persistence file first). */
  stop(): Promise<void>;
  /** Starts it again on the same port with the same persistence. */
  start(): Promise<void>;
}

async function accepting(port: number, timeoutMs = 10_000): Promise<void> {
  await until(`mosquitto to listen on ${port}`, () => new Promise<boolean>((resolve) => {
    const socket = net.connect(port, '127.0.0.1', () => (socket.destroy(), resolve(true)));
    socket.on('error', () => resolve(false));
  }), timeoutMs);
}

/**
 * Starts a broker; stop it in the test's teardown.
 * @param settings more lines of mosquitto.conf, e.g. `max_packet_size 4096`
 */
export async function startBroker(settings: string[] = []): Promise<Broker> {
  const executable = requireProgram('mosquitto');
  const dir = tempDataDir();
  const port = await freePort();
  const conf = path.join(dir, 'mosquitto.conf');
  fs.writeFileSync(conf, [
    `listener ${port} 127.0.0.1`,
    'allow_anonymous true',
    'persistence true',
    `persistence_location ${dir}/`,
    'max_queued_messages 0', // a persistent subscriber's queue is not cut while it reconnects
    'log_dest none',
    // Run as root, mosquitto drops to user `mosquitto` by default, which cannot write the
    // persistence file in this process's temp dir: stay the user we are (mosquitto.conf(5), `user`).
    `user ${os.userInfo().username}`,
    ...settings,
  ].join('\n'));
  let child: ChildProcess | undefined;
  const broker: Broker = {
    url: `mqtt://127.0.0.1:${port}`,
    async start() {
      const started = spawn(executable, ['-c', conf], { stdio: 'ignore' });
      child = started;
      await accepting(port);
    },
    async stop() {
      const running = child;
      if (!running || running.exitCode !== null) return;
      child = undefined;
      const exited = new Promise((resolve) => running.once('exit', resolve));
      running.kill('SIGTERM');
      await exited;
    },
  };
  await broker.start();
  return broker;
}
