import { TroupeError } from '../errors.js';
import type { PermissionTier } from '../tools/tool.js';
import { adaptRole, type RoleAdaptation } from './adapt.js';
import { builtinRoles } from './builtin.js';
import { type AnyRole, isRole } from './role.js';

/**
 * The roles a runtime knows by name: the built-ins first, then the user's,
 * then any role object handed straight to `spawn()`. Resolves spawn
 * arguments and orders batches.
 */
export class RoleRegistry {
  readonly #roles = new Map<string, AnyRole>();
  readonly #grants: readonly PermissionTier[] | undefined;
  readonly #adaptations = new Map<string, RoleAdaptation>();

  /**
   * Throws `usage.invalid_role` for an entry not made with defineRole().
   * With `grants`, each role is fitted to them (see adaptRole).
   */
  constructor(extra: readonly AnyRole[], grants?: readonly PermissionTier[]) {
    this.#grants = grants;
    for (const role of [...builtinRoles(), ...extra]) {
      if (!isRole(role))
        throw new TroupeError('usage.invalid_role', 'roles must be made with defineRole().');
      this.#roles.set(role.name, this.#fit(role));
    }
  }

  /** What fitting the roles to the grants took away, by role. */
  adaptations(): RoleAdaptation[] {
    return [...this.#adaptations.values()].filter((adaptation) => this.#roles.has(adaptation.role));
  }

  #fit(role: AnyRole): AnyRole {
    if (this.#grants === undefined) return role;
    const fitted = adaptRole(role, this.#grants);
    if (fitted.adaptation === undefined) this.#adaptations.delete(role.name);
    else this.#adaptations.set(role.name, fitted.adaptation);
    return fitted.role;
  }

  /** Every known role, built-ins first. */
  all(): AnyRole[] {
    return [...this.#roles.values()];
  }

  /** Every known role name, built-ins first. */
  names(): string[] {
    return [...this.#roles.keys()];
  }

  /** The role called `name`, if known. */
  get(name: string): AnyRole | undefined {
    return this.#roles.get(name);
  }

  /** Whether a role called `name` is known. */
  has(name: string): boolean {
    return this.#roles.has(name);
  }

  /**
   * The role a spawn names: a known name, or a role object (learned on first
   * use). Throws `usage.invalid_role` for anything else.
   */
  resolve(role: string | AnyRole): AnyRole {
    if (typeof role !== 'string') {
      if (!isRole(role)) {
        throw new TroupeError(
          'usage.invalid_role',
          'spawn() takes a role name or a role made with defineRole().',
        );
      }
      // A role object spawned directly is fitted too; the first of a name is learned.
      if (this.#roles.has(role.name))
        return this.#grants === undefined ? role : adaptRole(role, this.#grants).role;
      const fitted = this.#fit(role);
      this.#roles.set(role.name, fitted);
      return fitted;
    }
    const known = this.#roles.get(role);
    if (known === undefined) throw this.unknown(role);
    return known;
  }

  /** The error for a role name nobody defined, listing the known ones. */
  unknown(name: string): TroupeError {
    return new TroupeError(
      'usage.invalid_role',
      `Unknown role "${name}". Known roles: ${this.names().join(', ')}.`,
    );
  }

  /**
   * `tasks` with their indexes in spawn order: publishers (and unknown roles)
   * first, then roles that neither publish nor subscribe, then subscribers.
   */
  spawnOrder<TTask extends { role: string }>(
    tasks: readonly TTask[],
  ): { task: TTask; index: number }[] {
    const rank = (name: string): number => {
      const role = this.#roles.get(name);
      if (role === undefined || role.publishes.length > 0) return 0;
      return role.subscribes.length > 0 ? 2 : 1;
    };
    return tasks
      .map((task, index) => ({ task, index }))
      .sort((a, b) => rank(a.task.role) - rank(b.task.role));
  }
}
