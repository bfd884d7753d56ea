import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../config.js';
import { describeTopology, parseHostList } from './topology.js';

describe('Redis topology configuration', () => {
  it('reads one server, a sentinel set or a cluster', () => {
    expect(loadConfig({}).redis).toBe(null);
    expect(loadConfig({ REDIS_URL: 'redis://:pw@10.0.0.1:6379' })).toMatchObject({ redisUrl: 'redis://:pw@10.0.0.1:6379', redis: { kind: 'single', url: 'redis://:pw@10.0.0.1:6379' } });
    expect(loadConfig({ REDIS_SENTINELS: '10.0.0.1:26379, [::1]:26380', REDIS_SENTINEL_NAME: 'main', REDIS_SENTINEL_PASSWORD: 's3', REDIS_PASSWORD: 'd4' })).toMatchObject({
      redisUrl: null,
      redis: { kind: 'sentinel', sentinels: [{ host: '10.0.0.1', port: 26379 }, { host: '::1', port: 26380 }], name: 'main', sentinelPassword: 's3', password: 'd4' },
    });
    expect(loadConfig({ REDIS_CLUSTER_NODES: 'redis-a:7000,redis-b:7001' }).redis).toStrictEqual({ kind: 'cluster', nodes: [{ host: 'redis-a', port: 7000 }, { host: 'redis-b', port: 7001 }] });
  });

  it('refuses an ambiguous or incomplete deployment with a message naming the variable', () => {
    const bad: Array<[Record<string, string>, RegExp]> = [
      [{ REDIS_URL: 'redis://a:6379', REDIS_CLUSTER_NODES: 'a:7000' }, /set only one of REDIS_URL, REDIS_SENTINELS and REDIS_CLUSTER_NODES .*REDIS_URL and REDIS_CLUSTER_NODES/],
      [{ REDIS_SENTINELS: 'a:26379', REDIS_CLUSTER_NODES: 'a:7000' }, /set only one of/],
      [{ REDIS_SENTINELS: 'a:26379' }, /REDIS_SENTINEL_NAME is required with REDIS_SENTINELS/],
      [{ REDIS_SENTINEL_NAME: 'main' }, /REDIS_SENTINEL_NAME needs REDIS_SENTINELS/],
      [{ REDIS_SENTINEL_PASSWORD: 'x' }, /REDIS_SENTINEL_PASSWORD needs REDIS_SENTINELS/],
      [{ REDIS_SENTINELS: 'a', REDIS_SENTINEL_NAME: 'main' }, /REDIS_SENTINELS: "a" is not host:port/],
      [{ REDIS_SENTINELS: 'a:0', REDIS_SENTINEL_NAME: 'main' }, /REDIS_SENTINELS: "a:0" is not host:port/],
      [{ REDIS_SENTINELS: ' , ', REDIS_SENTINEL_NAME: 'main' }, /REDIS_SENTINELS: no host:port given/],
      [{ REDIS_SENTINELS: 'a:1', REDIS_SENTINEL_NAME: 'two words' }, /REDIS_SENTINEL_NAME must be at most 200 characters without spaces/],
      [{ REDIS_CLUSTER_NODES: 'a:70000' }, /REDIS_CLUSTER_NODES: "a:70000" is not host:port/],
      [{ REDIS_CLUSTER_NODES: 'redis://a:7000' }, /REDIS_CLUSTER_NODES: "redis:\/\/a:7000" is not host:port/],
      [{ REDIS_URL: 'redis://a:6379', REDIS_PASSWORD: 'x' }, /put the password in REDIS_URL/],
      [{ REDIS_PASSWORD: 'x' }, /REDIS_PASSWORD needs REDIS_SENTINELS or REDIS_CLUSTER_NODES/],
    ];
    for (const [env, message] of bad) {
      expect(() => loadConfig(env), JSON.stringify(env)).toThrow(ConfigError);
      expect(() => loadConfig(env), JSON.stringify(env)).toThrow(message);
    }
  });

  it('names a deployment without its passwords', () => {
    expect(describeTopology({ kind: 'single', url: 'redis://:secret@h:6379' })).toBe('redis://:***@h:6379');
    expect(describeTopology({ kind: 'sentinel', sentinels: [{ host: 'a', port: 1 }, { host: '::1', port: 2 }], name: 'm', password: 'secret', sentinelPassword: 'secret' })).toBe('primary "m" via sentinels a:1,[::1]:2');
    expect(describeTopology({ kind: 'cluster', nodes: [{ host: 'a', port: 7000 }], password: 'secret' })).toBe('cluster a:7000');
    expect(parseHostList('a:1,b:2')).toStrictEqual([{ host: 'a', port: 1 }, { host: 'b', port: 2 }]);
  });
});
