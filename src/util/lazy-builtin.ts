// process.getBuiltinModule is Node 20.16+; before it, a require is made once (importing node:module
// costs a worker thread more than it saves, so newer Node versions never load it here).
const requireBuiltin =
  typeof process.getBuiltinModule === 'function'
    ? undefined
    : (await import('node:module')).createRequire(import.meta.url);

/**
 * A Node built-in module loaded on its first use instead of at import. Every
 * worker thread compiles the built-ins its modules import (`node:https`
 * brings `tls`, `child_process` brings `dgram` and more with them), so tools
 * that most runs never call (fetch, the exec tools) should not make every
 * thread pay for them at its start.
 *
 * @example
 * const loadHttp = lazyBuiltin<typeof import('node:http')>('node:http');
 * loadHttp().request(url);
 */
export function lazyBuiltin<TModule>(name: `node:${string}`): () => TModule {
  let loaded: TModule | undefined;
  return () => {
    loaded ??= (requireBuiltin?.(name) ?? process.getBuiltinModule(name)) as TModule;
    return loaded;
  };
}
