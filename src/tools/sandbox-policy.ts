import { z } from 'zod';

/**
 * What a run lets its exec tools and write tool do beyond the defaults:
 * resource limits, protected-path writes and the domains egress may reach.
 * Plain data, so it crosses to worker threads in the host config.
 */
export const ExecLimitsSchema = z
  .object({
    cpuSeconds: z.number().positive(),
    memoryBytes: z.number().positive(),
    processes: z.number().int().positive(),
    fileSizeBytes: z.number().positive(),
    openFiles: z.number().int().positive(),
    tmpBytes: z.number().positive(),
    /** stdout plus stderr kept per call; the program is stopped past it. */
    outputBytes: z.number().int().positive(),
  })
  .partial();
export type ExecLimitsOverride = z.infer<typeof ExecLimitsSchema>;

export const SandboxPolicySchema = z.object({
  /** Limits that replace the defaults (`--exec-limit name=value`). */
  limits: ExecLimitsSchema.optional(),
  /** Let write_file and the exec tools change protected paths (`--allow-protected-writes`). */
  allowProtectedWrites: z.boolean().optional(),
  /**
   * Host patterns (`example.com`, `*.example.com`) that fetch_url and exec
   * egress may reach (`--allow-domain`); absent means any public host.
   */
  allowDomains: z.array(z.string()).optional(),
});
export type SandboxPolicy = z.infer<typeof SandboxPolicySchema>;
