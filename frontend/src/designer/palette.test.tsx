import { cleanup, render, screen } from '@testing-library/react';
import { afterEach, describe, expect, it } from 'vitest';
import { SPECS } from './fixtures';
import { Palette } from './Palette';
import { SpecsContext } from './specs-context';

afterEach(cleanup);

describe('palette', () => {
  it('offers every node type but the placeholder an import leaves for a type flowbroker lacks', () => {
    render(
      <SpecsContext.Provider value={SPECS}>
        <Palette onAdd={() => undefined} disabled={false} />
      </SpecsContext.Provider>,
    );
    const palette = screen.getByLabelText('Palette');
    expect(SPECS.Unsupported?.category).toBe('unsupported');
    expect(palette.textContent).toContain('Route');
    expect(palette.textContent).not.toContain('Unsupported node');
    expect(palette.querySelector('.cat-unsupported')).toBeNull();
  });
});
